import { Injectable } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { eventIdProblem, MAX_EVENT_ID_LENGTH } from '../webhooks/payment-webhook-envelope.js';
import type { PaymentDeadLetter, PaymentDeadLetterListOptions } from './payment-dead-letter.interface.js';
import { type PaymentEventJob, toPaymentDeadLetter } from './payment-event-job.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

const DEFAULT_LIST_LIMIT = 50;
const MAX_LIST_LIMIT = 1000;

/**
 * The dead letters of queue-mode accounts: events whose handlers failed on every attempt.
 * Inject it anywhere `PaymentModule` is imported, e.g. behind an admin route or from a REPL
 * (`await get(PaymentDeadLetterService).replay('evt_123')`). Every method names the account
 * (its last argument, `list`'s `options.account`; default: the default account); an account without `processing: 'queue'` is a
 * `PaymentConfigurationError`. Every method rejects with a `PaymentQueueUnavailableError` when
 * Redis cannot be reached within `redisTimeoutMs`, and so does a `replay` or `discard` that Redis
 * fails halfway (the failed command's reason in its message; the dead letter stays).
 * @publicApi
 */
@Injectable()
export class PaymentDeadLetterService {
  private readonly logger = new PaymentLogger('PaymentQueue');

  constructor(private readonly registry: PaymentAccountRegistry) {}

  /** The accounts with `processing: 'queue'`: those the other methods take (e.g. to check a name an admin route was given). */
  accounts(): string[] {
    return this.registry.queueAccountNames();
  }

  /**
   * Dead letters of one account, newest first. `offset` and `limit` count dead letters only:
   * other failed jobs in the account's queue (another producer's) are neither returned nor counted.
   * One replayed or discarded while the page is read is left out (the page is then shorter).
   */
  async list(options: PaymentDeadLetterListOptions = {}): Promise<PaymentDeadLetter[]> {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('PaymentDeadLetterService.list: options must be an object ({ account?, offset?, limit? }) or left out');
    }
    const { account = DEFAULT_PAYMENT_ACCOUNT, offset = 0, limit = DEFAULT_LIST_LIMIT } = options;
    if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError('PaymentDeadLetterService.list: offset must be a whole number, 0 or more');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new RangeError(`PaymentDeadLetterService.list: limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`);
    }
    const queue = this.registry.requireQueue(account);
    const ids = await queue.boundedRead(() => queue.deadLetterJobIds(offset, limit));
    // the state after the job: one replayed between the reads (back in the queue, its failure
    // wiped) is left out, never listed as a dead letter with no attempts and no error
    const jobs = await queue.boundedRead(() => Promise.all(ids.map((id) => queue.failedJob(id))));
    return jobs
      .filter((job): job is PaymentEventJob => job !== undefined)
      .map((job) => toPaymentDeadLetter(job, queue.account, queue.options.queueDeadLetterRetentionMs));
  }

  /** The dead letter of `eventId`, or `undefined` when the event is not (or no longer) one. */
  async get(eventId: string, account: string = DEFAULT_PAYMENT_ACCOUNT): Promise<PaymentDeadLetter | undefined> {
    const queue = this.registry.requireQueue(account);
    assertEventId(eventId);
    const job = await queue.boundedRead(() => queue.findDeadLetter(eventId));
    return job === undefined ? undefined : toPaymentDeadLetter(job, queue.account, queue.options.queueDeadLetterRetentionMs);
  }

  /**
   * Runs the event again through the queue, with a fresh set of attempts: a worker claims it
   * and runs its handlers once (if they fail again, it becomes a dead letter again).
   * Resolves `false` when `eventId` is not a dead letter (never was, already replayed,
   * discarded or removed after its retention).
   */
  async replay(eventId: string, account: string = DEFAULT_PAYMENT_ACCOUNT): Promise<boolean> {
    const queue = this.registry.requireQueue(account);
    assertEventId(eventId);
    const replayed = await queue.replayDeadLetter(eventId);
    if (replayed) this.logger.log(`Dead letter ${eventId} (account ${account}) replayed: back in the queue`);
    return replayed;
  }

  /** Drops the dead letter of `eventId` without running it; `false` when there is none. */
  async discard(eventId: string, account: string = DEFAULT_PAYMENT_ACCOUNT): Promise<boolean> {
    const queue = this.registry.requireQueue(account);
    assertEventId(eventId);
    return queue.actOnDeadLetter(eventId, async (job) => {
      await job.remove();
      this.logger.log(`Dead letter ${eventId} (account ${queue.account}) discarded`);
      return true;
    });
  }
}

/** An id the webhook route could have taken (see the envelope's checks); anything else is a caller's mistake. */
function assertEventId(eventId: unknown): asserts eventId is string {
  if (eventIdProblem(eventId) !== undefined) {
    throw new TypeError(
      `PaymentDeadLetterService: eventId must be a non-blank string of at most ${MAX_EVENT_ID_LENGTH} characters (well-formed Unicode)`,
    );
  }
}
