import { randomUUID } from 'node:crypto';
import { inspect, type InspectOptions } from 'node:util';
import { type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { withTimeout } from '../common/promise-timeout.util.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { redisErrorDescriber } from '../config/redact-url.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { notReadyReason, type RedisClientLike, redisErrorCause } from '../stores/redis-client.js';
import { processedMarkKeys } from '../stores/redis-processed-mark.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { queuedTraceParent } from '../telemetry/queue-job.telemetry.js';
import { PaymentWebhookHttpException } from '../webhooks/payment-webhook-http.exception.js';
import type { PaymentWebhookAck } from '../webhooks/payment-webhook.processor.js';
import { webhookEventKey } from '../webhooks/webhook-store-keys.js';
import type { BullMqModule, BullQueue } from './bullmq.loader.js';
import {
  isPaymentEventJob,
  jobFailureMark,
  type PaymentEventJob,
  type PaymentEventJobData,
  paymentEventJobId,
  setJobTraceParent,
  toPaymentEventJobData,
} from './payment-event-job.js';
import { WebhookEventInFlightError } from '../webhooks/payment-webhook.errors.js';
import { PaymentQueueUnavailableError, WebhookQueueUnavailableError } from './payment-queue.errors.js';
import { fastestDeadLetterMs, paymentEventJobOptions, paymentQueueLayout } from './payment-queue.settings.js';
import { withDeadLetterLock } from './dead-letter-lock.js';
import { DeadLetterTrimmer } from './dead-letter-trimmer.js';
import { deadLetterPage } from './dead-letter-listing.js';
import { JOB_STATE_SCRIPT, MetJob } from './queued-job-state.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/** KEYS: a job's hash. Forgets how often it was found stalled (BullMQ's `stc`). */
const RESET_STALLS_SCRIPT = "return redis.call('HDEL', KEYS[1], 'stc')";

/** How often a delivery looks again at a job another replay or discard acted on meanwhile. */
const DEAD_LETTER_LOOKS = 3;

/**
 * One account's queue, producer side: the webhook route hands verified events to it, the
 * dead-letter service reads and moves its failed jobs. Runs on the app's fail-fast Redis
 * connection for the queue URL (no offline queue: a command fails at once while Redis is
 * down), so an event is acknowledged only once Redis has it.
 */
export class PaymentEventQueue implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  readonly account: string;
  #queue: BullQueue<PaymentEventJobData> | undefined;
  private readonly logger = new PaymentLogger('PaymentQueue');
  /** An error's message without the queue URL's secrets. */
  private readonly describe: (error: unknown) => string;
  private outageLogged = false;
  private closed = false;
  private readonly trimmer: DeadLetterTrimmer;
  /** The app's fail-fast connection to the queue's Redis (its options hold the password). */
  readonly #connection: RedisClientLike;
  /** BullMQ's failed set of this queue: where dead letters are. */
  private readonly deadLetterKey: string;
  /** BullMQ's key of a job's hash in this queue, less the job id. */
  private readonly jobKeyPrefix: string;
  /** See `fastestDeadLetterMs`: a round of a delivery longer than this reads the job again. */
  private readonly fastestDeadLetterMs: number;
  /** The Redis key of an event's processed mark, where the store is on this queue's connection. */
  private readonly processedMarkKey: ((storeKey: string) => string) | undefined;

  constructor(
    private readonly bull: BullMqModule,
    readonly options: ResolvedPaymentOptions,
    private readonly store: WebhookEventStore,
    connection: RedisClientLike,
    /** Lets go of `connection` (the app's shared one closes with its last user); called once the queue closed. */
    private readonly releaseConnection: () => Promise<void> = async () => undefined,
  ) {
    this.#connection = connection;
    this.account = options.account;
    this.describe = redisErrorDescriber(options.queueRedisUrl ?? '');
    const { name, prefix } = paymentQueueLayout(options);
    this.jobKeyPrefix = `${prefix}:${name}:`;
    this.deadLetterKey = `${this.jobKeyPrefix}failed`;
    this.processedMarkKey = processedMarkKeys(store, connection);
    this.fastestDeadLetterMs = fastestDeadLetterMs(options);
    this.trimmer = new DeadLetterTrimmer(connection, options, { failedKey: this.deadLetterKey, jobKeyPrefix: this.jobKeyPrefix }, this.logger, this.describe);
  }

  /** The account's BullMQ queue, made in `onModuleInit`: it connects as it is made, and an app whose creation failed runs no hook to close it. */
  get queue(): BullQueue<PaymentEventJobData> {
    if (this.#queue === undefined) {
      const { name, prefix } = paymentQueueLayout(this.options);
      this.#queue = new this.bull.Queue<PaymentEventJobData>(name, { connection: this.#connection, prefix, defaultJobOptions: paymentEventJobOptions(this.options) });
      // without a listener BullMQ prints every connection error; the route reports outages itself
      this.#queue.on('error', () => undefined);
    }
    return this.#queue;
  }

  onModuleInit(): void {
    if (!this.closed) void this.queue;
  }

  /** The job id of `eventId` in this account's queue. */
  jobId(eventId: string): string {
    return paymentEventJobId(this.account, eventId);
  }

  /** Runs a replay or discard of `eventId`'s dead letter under its lock (see `dead-letter-lock.ts`). */
  withDeadLetterLock<T>(eventId: string, action: () => Promise<T>): Promise<T> {
    return withDeadLetterLock(this.#connection, this.options, eventId, action);
  }

  /**
   * Answers a verified delivery: `{ received, duplicate }` when the event store says it was
   * processed, else `{ received, queued }` once Redis acknowledged the job (a copy of an
   * event already queued finds its job and adds nothing).
   * The whole answer (the processed-check included, whatever store answers it) waits at most
   * `redisTimeoutMs`: the service retries a 503, and a late write is harmless because every
   * copy of an event has the same job id.
   * @throws PaymentWebhookHttpException 503 `WEBHOOK_QUEUE_UNAVAILABLE` when Redis did not
   *   acknowledge within `redisTimeoutMs`; nothing was accepted. 409 `WEBHOOK_EVENT_IN_FLIGHT`
   *   when the event's job is on its last attempt (see `write`).
   */
  async enqueue(event: AnyPaymentEvent): Promise<PaymentWebhookAck> {
    const timeoutMs = this.options.redisTimeoutMs;
    let ack: PaymentWebhookAck;
    try {
      ack = await withTimeout(this.write(event, new Date()), timeoutMs, () => new Error(`Redis did not take the event within ${timeoutMs} ms`));
    } catch (error) {
      if (error instanceof PaymentWebhookHttpException) throw error; // the write's own answer (409)
      this.reportOutage(error);
      // never the raw error: ioredis' errors carry their command, a refused AUTH its password
      throw new PaymentWebhookHttpException(new WebhookQueueUnavailableError({ cause: redisErrorCause(error, this.describe) }));
    }
    if (this.outageLogged) {
      this.outageLogged = false;
      this.logger.log(`The event queue of account ${this.account} accepts events again`);
    }
    return ack;
  }

  /**
   * The processed-check and the job's state, then the job (unless the event was processed or has
   * one). A job already there is left as it is (a copy of an event waiting or running adds
   * nothing), except a dead letter: a new delivery of it (the portal's re-trigger) replays it, as
   * the inline route would run it again; answered `queued`, it must not stay a dead letter its
   * trim may delete. Two commands for a new event where the store shares the queue's connection
   * (the read checks the processed mark too), three where it does not.
   */
  private async write(event: AnyPaymentEvent, receivedAt: Date): Promise<PaymentWebhookAck> {
    // new answer objects each time: a host interceptor may add to them
    const storeKey = webhookEventKey(this.account, event.eventId);
    const markKey = this.processedMarkKey?.(storeKey);
    if (markKey === undefined && (await this.processedBefore(storeKey))) return { received: true, duplicate: true };
    const jobId = this.jobId(event.eventId);
    if (this.#connection.status !== 'ready') await this.untilConnected();
    // A dead letter someone else replayed or discarded meanwhile is looked at again: replayed onto
    // its last attempt, this copy must be a 409 like any other copy then, not an acknowledgement.
    for (let look = 1; ; look++) {
      const readAt = performance.now();
      let met = await this.readJobState(jobId, '', markKey);
      if (met === MetJob.NoJob) met = await this.add(event, receivedAt, jobId, markKey, readAt);
      if (met === MetJob.Processed) return { received: true, duplicate: true };
      if (met === MetJob.OnLastAttempt) {
        // This copy adds nothing, and if that last attempt fails the event is a dead letter though
        // the copy was acknowledged. A 409, as inline: the service's retry finds it handled, or a
        // dead letter it replays (below).
        throw new PaymentWebhookHttpException(new WebhookEventInFlightError());
      }
      if (met === MetJob.Other) return { received: true, queued: true };
      if (met === MetJob.DeadLetter && (await this.replayDeadLetter(event.eventId))) {
        this.logger.log(`Dead letter ${event.eventId} (account ${this.account}) delivered again by the service: replayed`);
        return { received: true, queued: true };
      }
      // a job gone since the read is added again; still changing under this copy after a few
      // looks: the service's retry looks again
      if (look === DEAD_LETTER_LOOKS) throw new PaymentWebhookHttpException(new WebhookEventInFlightError());
    }
  }

  /**
   * Adds the job of an event the read found none of (a no-op where a copy arriving at the same
   * time added it first). With attempts to spare, the copy is acknowledged: that job has more to
   * follow, unless it failed every attempt since the read; possible only when this round lasted
   * longer than the fastest way a job can become a dead letter (`fastestDeadLetterMs`: 30 s
   * with the defaults, nothing with `queueBackoffMs: 0`), and then the job is read again. On an
   * account with one attempt, copies arriving together must know which one queued it, and read
   * again. The add carries this delivery's mark: read again, the job it queued is its own to
   * acknowledge, whatever became of it meanwhile.
   */
  private async add(event: AnyPaymentEvent, receivedAt: Date, jobId: string, markKey: string | undefined, readAt: number): Promise<MetJob> {
    const data = toPaymentEventJobData(this.account, event, receivedAt, queuedTraceParent());
    const mark = randomUUID();
    await this.queue.add(event.eventType, data, { jobId, paymentDeliveryId: mark });
    if (this.options.queueAttempts > 1 && performance.now() - readAt < this.fastestDeadLetterMs) return MetJob.Other;
    return this.readJobState(jobId, mark, markKey);
  }

  /** What the event's job is (see `JOB_STATE_SCRIPT`); `mark` names this delivery's add, if any (else empty). */
  private readJobState(jobId: string, mark: string, markKey: string | undefined): Promise<MetJob> {
    const { queueAttempts, queueMaxStalledCount } = this.options;
    const keys = markKey === undefined ? [this.deadLetterKey, this.jobKeyPrefix + jobId] : [this.deadLetterKey, this.jobKeyPrefix + jobId, markKey];
    return this.#connection.eval(JOB_STATE_SCRIPT, keys.length, ...keys, jobId, mark, queueAttempts, queueMaxStalledCount) as Promise<MetJob>;
  }

  /**
   * A dead-letter read, bounded by `redisTimeoutMs`: BullMQ's reads wait for its connection
   * without a limit, so an admin route would hang while Redis is down or refuses the password.
   */
  async boundedRead<T>(read: () => Promise<T>): Promise<T> {
    const ms = this.options.redisTimeoutMs;
    try {
      if (this.#connection.status !== 'ready') await this.untilConnected();
      return await withTimeout(read(), ms, () => new Error(`Redis did not answer within ${ms} ms`));
    } catch (error) {
      throw new PaymentQueueUnavailableError(this.account, this.describe(error));
    }
  }

  /** Job ids of a page of dead letters, newest first (see `dead-letter-listing.ts`). */
  deadLetterJobIds(offset: number, limit: number): Promise<string[]> {
    return deadLetterPage(this.#connection, { failedKey: this.deadLetterKey, offset, limit });
  }

  /** The failed job of `eventId`, a job this module wrote (one past its retention too, until the trim). */
  async findDeadLetter(eventId: string): Promise<PaymentEventJob | undefined> {
    return this.failedJob(this.jobId(eventId), eventId);
  }

  /** The job `jobId` while it is a failed job this module wrote (of `eventId`, when given): its state read after the job. */
  async failedJob(jobId: string, eventId?: string): Promise<PaymentEventJob | undefined> {
    const job = await this.queue.getJob(jobId);
    if (job === undefined || !isPaymentEventJob(job) || (eventId !== undefined && job.data.event.eventId !== eventId)) return undefined;
    return (await job.getState()) === 'failed' ? job : undefined;
  }

  /**
   * Runs `act` on the dead letter of `eventId` as it is when called, under the dead-letter lock;
   * `false` when there is none, or another replay or discard acted on it meanwhile. (With the lock
   * alone, of two replays at once the second could find the first's run failed again: a new dead letter.)
   */
  async actOnDeadLetter(eventId: string, act: (job: PaymentEventJob) => Promise<boolean>): Promise<boolean> {
    // bounded: BullMQ's read would wait without a limit for a connection down since boot
    const asked = await this.boundedRead(() => this.findDeadLetter(eventId));
    if (asked === undefined) return false;
    return this.withDeadLetterLock(eventId, async () => {
      const job = await this.findDeadLetter(eventId);
      if (job === undefined || jobFailureMark(job) !== jobFailureMark(asked)) return false;
      return act(job);
    });
  }

  /** Puts the dead letter of `eventId` back in the queue with fresh attempts; `false` when it is none (any more). */
  replayDeadLetter(eventId: string): Promise<boolean> {
    // the replay's span (a new delivery's, the caller's), not the first delivery's, is its runs' parent
    const parent = queuedTraceParent();
    return this.actOnDeadLetter(eventId, async (job) => {
      try {
        await setJobTraceParent(job, parent);
        // its take-overs too: BullMQ's retry keeps the stall count of one whose workers were killed
        if (job.id !== undefined) await this.#connection.eval(RESET_STALLS_SCRIPT, 1, this.jobKeyPrefix + job.id);
        await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      } catch (error) {
        // the job moved meanwhile (BullMQ's retry checks the failed set itself)
        if ((await job.getState()) !== 'failed') return false;
        throw error;
      }
      return true;
    });
  }

  /** Starts removing dead letters past their own retention (see `DeadLetterTrimmer`). */
  onApplicationBootstrap(): void {
    if (!this.closed) this.trimmer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.trimmer.stop();
    if (this.closed) return;
    this.closed = true;
    try {
      // BullMQ leaves a connection it was given open: released below, after the queue's last command
      await this.#queue?.close();
    } catch (error) {
      this.logger.warn(`Closing the event queue of account ${this.account} failed: ${this.describe(error)}`);
    }
    await this.releaseConnection();
  }

  /**
   * The fail-fast connection refuses commands while it makes its first connection (BullMQ's add
   * would wait): waits for one under way; when the connection is down, fails with why (the
   * last connection error, e.g. a refused password) rather than ioredis' "Stream isn't writeable".
   */
  private async untilConnected(): Promise<void> {
    const reason = await notReadyReason(this.#connection, this.options.redisTimeoutMs, this.describe);
    // the reason in the message only: the connection's own error carries its AUTH command
    if (reason !== undefined) throw new Error(reason);
  }

  /**
   * The store's non-claiming read. A store without it, or one that cannot answer, means
   * "queue it": the worker claims the event before running handlers, so a copy of a handled
   * event is dropped there.
   */
  private async processedBefore(storeKey: string): Promise<boolean> {
    if (this.store.isProcessed === undefined) return false;
    // Half the delivery's budget at most: a store that hangs (rather than failing fast) must
    // leave the queue time to take the event. The worker's claim decides anyway.
    const budgetMs = Math.floor(this.options.redisTimeoutMs / 2);
    try {
      return await withTimeout(this.store.isProcessed(storeKey), budgetMs, () => new Error('store timed out'));
    } catch {
      return false;
    }
  }

  /** The account only: the BullMQ queue and its connection hold the Redis password (`inspect` and JSON loggers alike). */
  toJSON(): Record<string, unknown> {
    return { account: this.account };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentEventQueue', this.toJSON(), depth, options);
  }

  /** Once per outage: a flood of deliveries must not flood the log. */
  private reportOutage(error: unknown): void {
    if (this.outageLogged) return;
    this.outageLogged = true;
    this.logger.error(
      `The event queue of account ${this.account} is unavailable; webhooks are answered 503 (the service retries): ${this.describe(error)}`,
    );
  }
}
