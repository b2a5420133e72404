import { PendingWork } from '../common/pending-work.util.js';

/** A job a worker runs, until BullMQ has recorded its outcome. */
interface InFlightJob {
  recorded: Promise<void>;
  resolve: () => void;
  /** Forgets the job if BullMQ never records an outcome (its lock was lost). */
  forgetTimer?: NodeJS.Timeout;
}

/**
 * What one worker has running, for its shutdown to wait on: jobs taken whose outcome is not
 * recorded yet (BullMQ writes it, and emits 'completed' or 'failed', after the processor
 * settled), and handler runs until they end (those past `queueJobTimeoutMs` included).
 */
export class WorkerRunningJobs {
  private readonly inFlight = new Map<string, InFlightJob>();
  private readonly handling = new PendingWork();
  /** Clean-ups after timed-out runs (`trackCleanup`): waited for, but not jobs of their own. */
  private readonly cleanups = new PendingWork();

  /** @param forgetAfterMs how long after its processor settled a job whose outcome was never recorded is forgotten */
  constructor(private readonly forgetAfterMs: number) {}

  /** Jobs or handler runs, whichever are more. */
  get count(): number {
    return Math.max(this.inFlight.size, this.handling.size);
  }

  /** Handler runs. */
  get handlers(): number {
    return this.handling.size;
  }

  /**
   * Tracks job `id` from now until `recorded(id)`. Call the returned function once its
   * processor settled: BullMQ records an outcome within moments, and one it could not record
   * (its lock was lost) is forgotten after `forgetAfterMs`, so neither memory nor shutdown
   * waits for it. The timer goes as soon as the outcome is recorded.
   */
  begin(id: string): () => void {
    let resolve!: () => void;
    const entry: InFlightJob = { recorded: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() };
    this.inFlight.set(id, entry);
    return () => {
      if (this.inFlight.get(id) !== entry) return;
      entry.forgetTimer = setTimeout(() => {
        if (this.inFlight.get(id) === entry) this.recorded(id);
      }, this.forgetAfterMs).unref();
    };
  }

  /** The job's outcome is in Redis (completed, failed or delayed): shutdown need not wait for it. */
  recorded(id: string): void {
    const entry = this.inFlight.get(id);
    if (entry === undefined) return;
    clearTimeout(entry.forgetTimer);
    entry.resolve();
    this.inFlight.delete(id);
  }

  /** Resolves once job `id`'s outcome is recorded; at once when it is not tracked. */
  async whenRecorded(id: string): Promise<void> {
    await this.inFlight.get(id)?.recorded;
  }

  /** Counts `work` as running until it settles: shutdown waits for it. */
  track(work: Promise<unknown>): void {
    this.handling.track(work);
  }

  /** Waits for `work` at shutdown without counting it: the clean-up after a run already counted. */
  trackCleanup(work: Promise<unknown>): void {
    this.cleanups.track(work);
  }

  /** Clean-ups still under way. */
  get cleaning(): number {
    return this.cleanups.size;
  }

  /** Resolves `true` once nothing runs, `false` at `deadline` (epoch ms) if something still does. */
  async settle(deadline: number): Promise<boolean> {
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      timer = setTimeout(
        () => {
          timedOut = true;
          resolve();
        },
        Math.max(0, deadline - Date.now()),
      );
    });
    // a job fetched just before the pause may start after the first look
    while ((this.inFlight.size > 0 || this.handling.size > 0 || this.cleanups.size > 0) && !timedOut) {
      const running = [...[...this.inFlight.values()].map((job) => job.recorded), ...this.handling.promises(), ...this.cleanups.promises()];
      await Promise.race([Promise.all(running), expired]);
    }
    clearTimeout(timer);
    return !timedOut;
  }
}
