import type { LoggerService } from '@nestjs/common';

/** How often a lasting outage is said. */
const REPORT_INTERVAL_MS = 30_000;
/** An outage (every claim failing) this long is said at `error`, not `warn`. */
const ERROR_AFTER_MS = 5 * 60_000;

/**
 * A worker's jobs whose claim the event store failed (or did not answer) wait without using
 * attempts, so an outage makes no dead letters; it is said once per 30 s while it lasts, whatever
 * each claim's reason, and at `error` once it has lasted five minutes: a store of the app's own
 * that always throws (a bug) keeps its jobs waiting for good, and must not stay a warning.
 */
export class StoreOutageReport {
  private saidAt = Number.NEGATIVE_INFINITY;
  /** Since when claims have failed, until one gets an answer. */
  private since: number | undefined;

  constructor(
    private readonly logger: LoggerService,
    private readonly account: string,
    private readonly describe: (error: unknown) => string,
  ) {}

  /** A claim failed with `cause`. */
  failed(cause: unknown): void {
    const now = Date.now();
    this.since ??= now;
    if (now - this.saidAt < REPORT_INTERVAL_MS) return;
    this.saidAt = now;
    const lastedMs = now - this.since;
    const line =
      `Worker of account ${this.account}: the webhook event store failed a claim (unreachable, or a fault of the store itself)` +
      `${lastedMs > 0 ? ` for ${Math.round(lastedMs / 1000)} s` : ''}; jobs wait for it without using attempts and run once it answers: ${this.describe(cause)}`;
    if (lastedMs >= ERROR_AFTER_MS) this.logger.error(line);
    else this.logger.warn(line);
  }

  /** A claim got an answer: the outage, if any, is over. */
  answered(): void {
    this.since = undefined;
  }
}
