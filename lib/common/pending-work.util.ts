const ignore = (): void => undefined;

/**
 * Promises still running, each counted until it settles (fulfilled or rejected): what a shutdown
 * waits for before closing what they use. Used for the HTTP client's attempts on the wire and a
 * queue worker's handler runs.
 */
export class PendingWork {
  private readonly pending = new Set<Promise<void>>();

  get size(): number {
    return this.pending.size;
  }

  /** Counts `work` until it settles; its outcome is the caller's to handle. */
  track(work: Promise<unknown>): void {
    const settled = work.then(ignore, ignore);
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
  }

  /** What is tracked now, each settling (never rejecting) with its work. */
  promises(): Array<Promise<void>> {
    return [...this.pending];
  }

  /** Resolves once nothing tracked is running, work tracked meanwhile included. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all(this.pending);
  }
}
