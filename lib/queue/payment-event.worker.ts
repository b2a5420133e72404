import { inspect, type InspectOptions } from 'node:util';
import { type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { withTimeout } from '../common/promise-timeout.util.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { redisErrorDescriber } from '../config/redact-url.js';
import type { PaymentEventDispatcher } from '../events/payment-event.dispatcher.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import type { PaymentQueueJobOutcome } from '../telemetry/payment-telemetry.names.js';
import { QueueJobTelemetry } from '../telemetry/queue-job.telemetry.js';
import { PaymentWebhookHttpException, storeUnavailable } from '../webhooks/payment-webhook-http.exception.js';
import { PaymentWebhookErrorCode } from '../webhooks/payment-webhook.errors.js';
import { ALREADY_PROCESSED, WebhookDeduplicator } from '../webhooks/webhook-deduplicator.js';
import { accountDeduplicationSettings, type WebhookDeduplicationSettings } from '../webhooks/webhook-deduplication.settings.js';
import { outsideTraceContext } from '../telemetry/outside-trace-context.js';
import { webhookEventKey } from '../webhooks/webhook-store-keys.js';
import type { BullMqModule, BullWorker } from './bullmq.loader.js';
import type { PaymentEventQueue } from './payment-event-queue.js';
import type { PaymentWorkerShutdown, StoppableWorker } from './payment-worker-shutdown.service.js';
import { StoreOutageReport } from './store-outage-report.js';
import { TimedOutRunWaits } from './timed-out-run-waits.js';
import { WorkerRunningJobs } from './worker-running-jobs.js';
import { JobFailureLines } from './job-failure-lines.js';
import { foreignJobError, handBackNewerJob, OtherEnvironmentJobs, stalledTooOftenError } from './unrunnable-jobs.js';
import { cleanUpAfterLateRun } from './late-run-cleanup.js';
import { isNewerPaymentEventJob, isPaymentEventJob, type PaymentEventJob, type PaymentEventJobData, toPaymentDeadLetter, toReceivedPaymentEvent } from './payment-event-job.js';
import { attemptError, JOB_TIMEOUT_MARK, jobTimeoutError } from './payment-queue.errors.js';
import { paymentQueueLayout, paymentWorkerOptions } from './payment-queue.settings.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/** The same Redis error is logged at most this often while it lasts. */
const ERROR_LOG_INTERVAL_MS = 30_000;

/** At shutdown, how long completions still being retried get to give up and let their jobs be recorded. */
const COMPLETION_GIVE_UP_WAIT_MS = 3000;

/**
 * One account's BullMQ worker, started at application bootstrap (after the handlers were
 * discovered) where `queueWorker` is on. Each job runs the inline route's pipeline:
 * claim the event in the `WebhookEventStore` (same key, same exactly-once contract) →
 * reconciliation and handlers through the account's dispatcher → completion recorded.
 *
 * - Handlers failed: the claim is released and the attempt fails; BullMQ retries with
 *   exponential backoff, and after the last attempt the job stays in the failed set: a dead
 *   letter, logged and emitted as `payment-gateway.dead-letter` on the host's EventEmitter2.
 * - Processed before: the job completes without running handlers.
 * - Claimed elsewhere (a worker that died mid-handler, until its lease lapses; an inline
 *   instance sharing the store): the job waits in the delayed set without using an attempt.
 * - The store failed or did not answer the claim: nothing ran; the job waits likewise, and the
 *   outage is logged every 30 s (see `StoreOutageReport`).
 * - Worker killed: BullMQ's stalled-job check hands the job to another worker once the lock
 *   lapsed; the store claim keeps the handlers single as long as they are idempotent by eventId.
 */
export class PaymentEventWorker implements OnApplicationBootstrap, OnModuleDestroy, StoppableWorker {
  private readonly logger = new PaymentLogger('PaymentQueue');
  private readonly account: string;
  private readonly deduplicator: WebhookDeduplicator;
  private readonly dedupe: WebhookDeduplicationSettings;
  /** Runs whose handlers finished and whose completion is being recorded. */
  private completing = 0;
  private readonly telemetry: QueueJobTelemetry;
  private readonly inFlightDelayMs: number;
  /** An error's message without the queue URL's secrets. */
  private readonly describe: (error: unknown) => string;
  private readonly lastErrorLog = new Map<string, number>();
  /** A replayed capture of a failing event repeats its attempt and dead-letter lines: rate-limited per event. */
  private readonly failureLines: JobFailureLines;
  private readonly otherEnvironment: OtherEnvironmentJobs;
  private readonly storeOutage: StoreOutageReport;
  /** Events whose retry waits behind their own timed-out run: since when, last reported (see `TimedOutRunWaits.report`). */
  private readonly timedOutRunWaits: TimedOutRunWaits;
  private worker: BullWorker<PaymentEventJobData> | undefined;
  /** Jobs until their outcome is recorded, handler runs until they end, and the clean-up after a late one. */
  private readonly running: WorkerRunningJobs;
  private stopped = false;
  /** BullMQ's pause, under way since `stopTaking`. */
  private pausing: Promise<void> | undefined;

  constructor(
    private readonly bull: BullMqModule,
    private readonly options: ResolvedPaymentOptions,
    store: WebhookEventStore,
    private readonly dispatcher: PaymentEventDispatcher,
    /** The producer side of the same queue: its dead-letter lock. */
    private readonly queue: PaymentEventQueue,
    /** Stops this worker together with the app's other accounts' (see `onModuleDestroy`). */
    private readonly shutdown: PaymentWorkerShutdown,
  ) {
    this.account = options.account;
    shutdown.add(this);
    // a store outage is logged by the worker, once per 30 s, not once per job that meets it
    this.deduplicator = new WebhookDeduplicator(store, this.logger, { logClaimFailures: false });
    this.telemetry = new QueueJobTelemetry(this.account);
    // the inline route's lease and retention; the claim is renewed for as long as the handlers
    // run in this process, past queueJobTimeoutMs too: a retry must never run beside them.
    // Completion is retried until the store answers: if it were given up, the job's outcome,
    // lost in the same outage, would come back through the stalled-job check and run them again
    this.dedupe = {
      ...accountDeduplicationSettings(options),
      maxLeaseRenewalMs: Number.POSITIVE_INFINITY,
      completeAttempts: Number.POSITIVE_INFINITY,
      // twice the store's own bound: the Redis store gives up first, with its reason
      completeTimeoutMs: Math.max(1000, 2 * options.redisTimeoutMs),
    };
    // poll a foreign claim a few times per lease: it lapses at most one lease after its holder died
    this.inFlightDelayMs = Math.min(5000, Math.max(250, Math.floor(options.webhookLeaseMs / 4)));
    const url = options.queueRedisUrl ?? '';
    this.describe = redisErrorDescriber(url);
    this.running = new WorkerRunningJobs(options.queueLockDurationMs);
    this.timedOutRunWaits = new TimedOutRunWaits(this.logger, this.account, options.queueJobTimeoutMs);
    this.storeOutage = new StoreOutageReport(this.logger, this.account, this.describe);
    this.failureLines = new JobFailureLines(this.logger, this.account);
    this.otherEnvironment = new OtherEnvironmentJobs(bull, this.logger, options.environment === 'live');
  }

  onApplicationBootstrap(): void {
    if (this.worker !== undefined || this.stopped) return;
    // made outside the bootstrap's trace context: BullMQ's loop keeps the context it was made in,
    // and a job without a parent of its own (an untraced replay) would join a host's bootstrap span
    const worker = outsideTraceContext(
      () => new this.bull.Worker<PaymentEventJobData>(paymentQueueLayout(this.options).name, (job, token) => this.process(job, token), paymentWorkerOptions(this.options)),
    );
    worker.on('completed', (job) => {
      this.recorded(job);
      if (isPaymentEventJob(job)) this.timedOutRunWaits.forget(job.data.event.eventId);
    });
    worker.on('failed', (job, error) => this.onFailed(job, error));
    worker.on('error', (error) => this.onError(error));
    this.worker = worker;
  }

  /**
   * Stops the workers of every account of the app (`PaymentWorkerShutdown`): all of them stop
   * taking jobs at once, then drain together, so close() waits one `queueShutdownTimeoutMs`
   * (the longest of the accounts'), not one per account.
   */
  onModuleDestroy(): Promise<void> {
    return this.shutdown.stopAll();
  }

  /**
   * Stops taking jobs. A fetch already under way may still bring one: it is handed back
   * without running (see `process`). Pausing does not wait on the blocking connection
   * (pause(false) and close(false) would, forever while Redis is down).
   */
  stopTaking(): void {
    this.stopped = true;
    const worker = this.worker;
    if (worker === undefined) return;
    this.pausing = worker.pause(true).catch(() => undefined);
    this.logger.log(
      `Worker of account ${this.account} stopped taking jobs; waiting up to ${this.options.queueShutdownTimeoutMs} ms ` +
        `for ${this.running.count} running`,
    );
  }

  /**
   * Lets running jobs finish until `queueShutdownTimeoutMs` after `startedAt` (when the app's
   * workers stopped taking jobs), their outcome recorded; handlers that outlived their attempt's
   * `queueJobTimeoutMs` are waited for too (their claim is still held here). Jobs still running
   * then are given up: their lock and their claim are no longer renewed, and another worker
   * takes them over once both lapsed (so a handler that is still running here, in a process
   * that does not exit, may run again elsewhere).
   */
  async drain(startedAt: number): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    await this.pausing;
    if (!(await this.running.settle(startedAt + this.options.queueShutdownTimeoutMs))) {
      // a job whose handlers are done but whose completion is being retried is not "running"
      const recording = this.completing;
      const running = this.running.handlers - recording;
      const unrecorded = this.running.count - this.running.handlers;
      const said = [
        running > 0 ? `${running} job(s) whose handlers are still running: leaving their events to another worker` : '',
        recording > 0 ? `${recording} job(s) whose handlers finished could not record their completion (the store is unreachable): giving up on it, so that their jobs are recorded completed (where the queue's Redis takes it; if not, another worker runs them again)` : '',
        unrecorded > 0 ? `${unrecorded} job(s) whose outcome BullMQ has not recorded yet` : '',
      ].filter(Boolean);
      // a clean-up waits for its run (counted above) first: said only when nothing else is
      if (said.length === 0) said.push(`${this.running.cleaning} dead letter(s) of timed-out runs that then succeeded not removed yet`);
      this.logger.warn(`Worker of account ${this.account} after ${this.options.queueShutdownTimeoutMs} ms of shutdown: ${said.join('; ')}`);
    }
    // Claims of handlers left running are no longer renewed: this instance gives up their
    // events, which another worker takes over once lock and lease lapsed. A completion still
    // being retried gives up at once, mid-attempt too (logged), and its job is recorded completed
    // while the worker is still open: taken over instead, its handlers would run again.
    this.deduplicator.close();
    if (this.completing > 0) await this.running.settle(Date.now() + COMPLETION_GIVE_UP_WAIT_MS);
    try {
      // Forced: every outcome is recorded (or given up), so nothing is left to wait for.
      await worker.close(true);
    } catch (error) {
      this.logger.warn(`Closing the worker of account ${this.account} failed: ${this.describe(error)}`);
    }
  }

  /** Runs one job, or hands it back unrun, tracked until its outcome is recorded in Redis. */
  private process(job: PaymentEventJob, token?: string): Promise<void> {
    const newer = isNewerPaymentEventJob(job);
    if (!newer && !isPaymentEventJob(job)) return Promise.reject(foreignJobError(this.bull, this.logger, this.account, job));
    const settled = this.running.begin(job.id ?? '');
    let run: Promise<void>;
    if (newer) run = handBackNewerJob(this.bull, this.logger, this.account, job, token).finally(() => this.recorded(job));
    else if (this.stopped) run = this.handBack(job, token);
    else if (this.otherEnvironment.has(job)) run = this.otherEnvironment.handBack(job, token).finally(() => this.recorded(job));
    else run = this.run(job, token);
    run.then(settled, settled);
    return run;
  }

  /**
   * A job that a fetch under way brought after the worker stopped taking jobs goes back to the
   * queue without running and without using an attempt, for another worker (or this app's next
   * start): run here, its handlers could outlast the shutdown's wait. One that cannot be handed
   * back (Redis failed the move) runs like the others.
   */
  private async handBack(job: PaymentEventJob, token?: string): Promise<void> {
    try {
      await job.moveToDelayed(Date.now(), token);
    } catch {
      return this.run(job, token);
    }
    this.recorded(job);
    this.logger.log(`Worker of account ${this.account} is stopping: event ${job.data.event.eventId} handed back to the queue`);
    throw new this.bull.DelayedError();
  }

  /** The job's outcome is in Redis (completed, failed or delayed): shutdown need not wait for it. */
  private recorded(job: PaymentEventJob | undefined): void {
    this.running.recorded(job?.id ?? '');
  }

  private async run(job: PaymentEventJob, token?: string): Promise<void> {
    const event = toReceivedPaymentEvent(job.data, this.account);
    const timeoutMs = this.options.queueJobTimeoutMs;
    let handling: Promise<unknown> | undefined;
    let timedOut = false;
    try {
      // Telemetry measures the attempt, time-out included: a timed-out attempt is counted
      // 'failed' and its span ends then, while the handlers (their spans too) run on; their late
      // result is no outcome of it. The handlers start in the job span's context.
      await this.telemetry.run(
        event,
        job.attemptsMade + 1,
        job.data.trace,
        () => {
          let handlersStarted = false;
          let handlersDone = false;
          const run = this.deduplicator.run(webhookEventKey(this.account, event.eventId), this.dedupe, () => {
            // the claim came after the attempt was given up as the store's: nothing runs (the key is released, a retry runs it)
            if (timedOut) return Promise.reject(new Error('the claim was answered after its attempt was given up'));
            const stalled = stalledTooOftenError(this.bull, job, this.options.queueMaxStalledCount);
            if (stalled !== undefined) return Promise.reject(stalled);
            handlersStarted = true;
            return this.dispatcher.dispatch(event).finally(() => {
              handlersDone = true;
              this.completing++;
            });
          });
          // counted from the handlers' end to the run's: the completion being recorded
          const recorded = (): void => {
            if (handlersDone) this.completing--;
          };
          run.then(recorded, recorded);
          handling = run;
          this.running.track(run);
          // BullMQ renews the job's lock while this process lives: without a bound a hung handler
          // would keep a worker slot for good. The bound frees the slot; the store claim stays.
          // It bounds the handlers only: once they are done, the attempt waits for their completion
          // to be recorded (retried through a store outage), or its retry would run them again.
          return withTimeout(
            run,
            timeoutMs,
            () => {
              timedOut = true;
              // still claiming: the store did not answer, nothing ran (a claim answered later runs nothing either)
              if (!handlersStarted) return storeUnavailable(new Error(`the store did not answer the claim within queueJobTimeoutMs (${timeoutMs} ms)`));
              return jobTimeoutError(event.eventType, event.eventId, timeoutMs);
            },
            () => !handlersDone,
          );
        },
        jobOutcome,
      );
      this.storeOutage.answered();
    } catch (error) {
      // shutdown waits for this too: it needs the connections still open
      if (timedOut && handling !== undefined) this.running.trackCleanup(cleanUpAfterLateRun(job, handling, this.running, this.queue, this.logger, this.describe));
      const code = error instanceof PaymentWebhookHttpException ? error.code : undefined;
      if (code !== PaymentWebhookErrorCode.STORE_UNAVAILABLE) this.storeOutage.answered();
      if (code === PaymentWebhookErrorCode.EVENT_IN_FLIGHT && job.failedReason?.includes(JOB_TIMEOUT_MARK)) this.timedOutRunWaits.report(event);
      // nothing ran: another run holds the event, or the store could not be asked (its outage must
      // not spend attempts, or every event it meets would end a dead letter): wait, attempts untouched
      if (code === PaymentWebhookErrorCode.EVENT_IN_FLIGHT || code === PaymentWebhookErrorCode.STORE_UNAVAILABLE) {
        if (code === PaymentWebhookErrorCode.STORE_UNAVAILABLE) this.storeOutage.failed((error as PaymentWebhookHttpException).error.cause);
        await job.moveToDelayed(Date.now() + this.inFlightDelayMs, token);
        this.recorded(job);
        throw new this.bull.DelayedError();
      }
      throw attemptError(error);
    }
  }

  private onFailed(job: PaymentEventJob | undefined, error: Error): void {
    this.recorded(job);
    if (job === undefined || !isPaymentEventJob(job)) return;
    const { eventId, eventType } = job.data.event;
    if (typeof job.finishedOn === 'number') this.timedOutRunWaits.forget(eventId);
    const attempts = job.opts.attempts ?? 1;
    if (typeof job.finishedOn !== 'number') return this.failureLines.attemptFailed(job.attemptsMade, attempts, eventType, eventId, error.message);
    this.telemetry.deadLettered(eventType);
    this.failureLines.deadLettered(toPaymentDeadLetter(job, this.account, this.options.queueDeadLetterRetentionMs), this.dispatcher.hostEventEmitter, this.describe);
  }

  /** The account and its running jobs only: the BullMQ worker's options hold the Redis password. */
  toJSON(): Record<string, unknown> {
    return { account: this.account, running: this.running.handlers };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentEventWorker', this.toJSON(), depth, options);
  }

  /** Connection errors repeat while Redis is down; BullMQ reconnects by itself. */
  private onError(error: Error): void {
    const message = this.describe(error);
    const now = Date.now();
    const last = this.lastErrorLog.get(message);
    if (last !== undefined && now - last < ERROR_LOG_INTERVAL_MS) return;
    if (this.lastErrorLog.size > 100) this.lastErrorLog.clear();
    this.lastErrorLog.set(message, now);
    this.logger.warn(`Worker of account ${this.account}: ${message}`);
  }
}

/** The `outcome` of one attempt: `deduplicator.run`'s result, or what it threw. */
function jobOutcome(result: { value: unknown } | { error: unknown }): PaymentQueueJobOutcome {
  if ('value' in result) return result.value === ALREADY_PROCESSED ? 'duplicate' : 'handled';
  const error = result.error;
  if (!(error instanceof PaymentWebhookHttpException)) return 'failed';
  if (error.code === PaymentWebhookErrorCode.EVENT_IN_FLIGHT) return 'in_flight';
  return error.code === PaymentWebhookErrorCode.STORE_UNAVAILABLE ? 'unavailable' : 'failed';
}
