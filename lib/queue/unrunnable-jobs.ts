import type { LoggerService } from '@nestjs/common';
import type { BullMqModule } from './bullmq.loader.js';
import type { PaymentEventJob } from './payment-event-job.js';

// Jobs in an account's queue that this version of the worker must not run.

/** How long a job of a later release's layout waits before a worker looks at it again. */
const NEWER_JOB_DELAY_MS = 30_000;

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
 * A job of a later release's layout (a rolling upgrade): its delivery was answered 2xx, so it
 * must not fail, and this version cannot read it. Back to the queue for a while, unrun and
 * without using an attempt, for a worker that reads it.
 */
export async function handBackNewerJob(bull: BullMqModule, logger: LoggerService, account: string, job: PaymentEventJob, token?: string): Promise<never> {
  await job.moveToDelayed(Date.now() + NEWER_JOB_DELAY_MS, token);
  logger.warn(
    `Worker of account ${account}: job ${job.id ?? '(no id)'} was written by a later version of nestjs-payment-gateway ` +
      `(layout ${String((job.data as { v?: unknown }).v)}); handed back for ${NEWER_JOB_DELAY_MS / 1000} s, unrun: upgrade this worker`,
  );
  throw new bull.DelayedError();
}
