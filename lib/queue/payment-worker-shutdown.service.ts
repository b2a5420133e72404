import { inspect, type InspectOptions } from 'node:util';
import { Injectable } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';

/** What stopping needs of one account's worker (`PaymentEventWorker`). */
export interface StoppableWorker {
  /** Stops taking jobs, at once (synchronously). */
  stopTaking(): void;
  /** Lets running jobs finish until `startedAt` plus the account's `queueShutdownTimeoutMs`, then closes. Never rejects. */
  drain(startedAt: number): Promise<void>;
}

/**
 * Stops the queue workers of every account of the app together. Nest runs module-destroy
 * hooks one module at a time and each `forRoot()` is its own module: were each worker to stop
 * in its own hook, the accounts would drain one after the other (close() taking one
 * `queueShutdownTimeoutMs` per account) and those not reached yet would keep taking jobs.
 * The first worker's hook stops them all at once and drains them against one start time;
 * the later hooks wait on the same promise.
 */
@Injectable()
export class PaymentWorkerShutdown {
  private readonly workers = new Set<StoppableWorker>();
  private stopping: Promise<void> | undefined;

  add(worker: StoppableWorker): void {
    this.workers.add(worker);
  }

  /** Stops every worker (the first call; later ones get the same promise), resolving once all were drained and closed. */
  stopAll(): Promise<void> {
    if (this.stopping === undefined) {
      const startedAt = Date.now();
      const workers = [...this.workers];
      // every worker stops taking jobs before any of them starts waiting
      for (const worker of workers) worker.stopTaking();
      this.stopping = Promise.allSettled(workers.map((worker) => worker.drain(startedAt))).then(() => undefined);
    }
    return this.stopping;
  }

  /** A count only: the workers hold the accounts' options; `inspect` and JSON loggers alike. */
  toJSON(): Record<string, unknown> {
    return { workers: this.workers.size };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentWorkerShutdown', this.toJSON(), depth, options);
  }
}
