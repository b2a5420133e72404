import type { LoggerService } from '@nestjs/common';
import type { BullMqModule } from './bullmq.loader.js';
import type { PaymentEventJob } from './payment-event-job.js';
import { isFromOtherEnvironment } from '../webhooks/webhook-event-environment.js';

// Jobs in an account's queue that this version of the worker must not run.

/** How long a job of a later release's layout, or of the other environment, waits before a worker looks at it again. */
const HAND_BACK_DELAY_MS = 30_000;

/**
 * A job this module did not write (another producer in the account's queue, an edited one):
 * never run. It fails at once, without its remaining attempts, and stays in the failed set
 * for its owner; dead-letter listings leave it out.
 */
export function foreignJobError(bull: BullMqModule, logger: LoggerService, account: string, job: PaymentEventJob): Error {
  logger.warn(`Worker of account ${account}: job ${job.id ?? '(no id)'} (${job.name}) is no event job of this module; left failed, not run`);
  return new bull.UnrecoverableError('not an event job of nestjs-payment-gateway: left failed, not run');
}

/**
 * A job taken over more than `queueMaxStalledCount` times (BullMQ's `stc`: its workers died, or
 * stopped renewing its lock, while running it), met with its event's claim free and unprocessed:
 * the event likely kills its worker, so it becomes a dead letter, unrun. Asked only once the
 * claim is held, so a frozen worker that recovers finishes the event instead (its claim was held).
 */
export function stalledTooOftenError(bull: BullMqModule, job: PaymentEventJob, maxStalledCount: number): Error | undefined {
  const stalls = job.stalledCounter ?? 0;
  if (stalls <= maxStalledCount) return undefined;
  return new bull.UnrecoverableError(
    `its workers stopped ${stalls} times while running it (queueMaxStalledCount is ${maxStalledCount}): left a dead letter, not run again`,
  );
}

/**
 * A job of a later release's layout (a rolling upgrade): its delivery was answered 2xx, so it
 * must not fail, and this version cannot read it. Back to the queue for a while, unrun and
 * without using an attempt, for a worker that reads it.
 */
export function handBackNewerJob(bull: BullMqModule, logger: LoggerService, account: string, job: PaymentEventJob, token?: string): Promise<never> {
  return handBackForAWhile(bull, job, token, () =>
    logger.warn(
      `Worker of account ${account}: job ${job.id ?? '(no id)'} was written by a later version of nestjs-payment-gateway ` +
        `(layout ${String((job.data as { v?: unknown }).v)}); handed back for ${HAND_BACK_DELAY_MS / 1000} s, unrun: upgrade this worker`,
    ),
  );
}

/** Back to the queue for `HAND_BACK_DELAY_MS`, unrun and without using an attempt; `report` says why. */
async function handBackForAWhile(bull: BullMqModule, job: PaymentEventJob, token: string | undefined, report: () => void): Promise<never> {
  await job.moveToDelayed(Date.now() + HAND_BACK_DELAY_MS, token);
  report();
  throw new bull.DelayedError();
}

/**
 * Jobs whose event belongs to the other environment (a live app's `production` event in a
 * sandbox worker, or the reverse): the two apps share this queue, because they were given one
 * explicit `redisKeyPrefix`. The route of this account would not take the event, so its worker
 * must not run it either: back to the queue for a while, unrun and without using an attempt,
 * for a worker of its own environment. Said at most every 30 s (a job comes back every 30 s).
 */
export class OtherEnvironmentJobs {
  private loggedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly bull: BullMqModule,
    private readonly logger: LoggerService,
    private readonly accountIsLive: boolean,
  ) {}

  /** Whether `job` holds an event of the other environment (see `isFromOtherEnvironment`). */
  has(job: PaymentEventJob): boolean {
    return isFromOtherEnvironment(job.data.event.environment, this.accountIsLive);
  }

  handBack(job: PaymentEventJob, token: string | undefined): Promise<never> {
    return handBackForAWhile(this.bull, job, token, () => {
      if (Date.now() - this.loggedAt < HAND_BACK_DELAY_MS) return;
      this.loggedAt = Date.now();
      const { account, event } = job.data;
      this.logger.warn(
        `Worker of account ${account}: event ${event.eventId} is of environment ${JSON.stringify(event.environment)}, not this app's; ` +
          `handed back for ${HAND_BACK_DELAY_MS / 1000} s, unrun, for a worker of its environment. Apps of both environments share ` +
          'this queue: give each its own redisKeyPrefix (PAYMENT_REDIS_KEY_PREFIX; the default holds the environment)',
      );
    });
  }
}
