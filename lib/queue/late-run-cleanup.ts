import type { LoggerService } from '@nestjs/common';
import type { PaymentEventJob } from './payment-event-job.js';
import type { PaymentEventQueue } from './payment-event-queue.js';
import type { WorkerRunningJobs } from './worker-running-jobs.js';

/**
 * A run that outlived its attempt and then succeeded: the event is processed, so a dead
 * letter its attempt left behind goes (a replay once the store forgot the event would run
 * the handlers again). A retry still pending finds the event processed and runs nothing.
 */
export async function cleanUpAfterLateRun(
  job: PaymentEventJob,
  handling: Promise<unknown>,
  running: WorkerRunningJobs,
  queue: PaymentEventQueue,
  logger: LoggerService,
  describe: (error: unknown) => string,
): Promise<void> {
  try {
    await handling;
  } catch {
    return; // failed after all: the dead letter (or the retry) stands
  }
  const eventId = job.data.event.eventId;
  const account = queue.account;
  try {
    // the attempt's failure is being recorded meanwhile: read the state once it is
    await running.whenRecorded(job.id ?? '');
    // under the dead-letter lock: a replay or discard of it never interleaves with this
    const removed = await queue.withDeadLetterLock(eventId, async () => {
      if ((await job.getState()) !== 'failed') return false;
      await job.remove();
      return true;
    });
    if (removed) logger.log(`Dead letter ${eventId} (account ${account}) removed: its timed-out run finished successfully`);
  } catch (error) {
    logger.warn(
      `${job.data.event.eventType} event ${job.data.event.eventId} (account ${account}) was processed after its last attempt timed out, ` +
        `but its dead letter could not be removed (discard it; do not replay it): ${describe(error)}`,
    );
  }
}
