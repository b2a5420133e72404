import type { LoggerService } from '@nestjs/common';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';

/** Events whose waits are tracked at most (a flood of hung handlers must not grow memory). */
const MAX_WAITS_REPORTED = 1000;

/**
 * A retry that finds its event held by the run its previous attempt timed out on waits
 * without using attempts (never two runs at once), so a hung handler would keep its event
 * silently for as long as its process lives: reported as an error every `intervalMs` (the
 * account's `queueJobTimeoutMs`) of waiting, naming the fix.
 */
export class TimedOutRunWaits {
  private readonly waits = new Map<string, { since: number; reportedAt: number }>();

  constructor(
    private readonly logger: LoggerService,
    private readonly account: string,
    private readonly intervalMs: number,
  ) {}

  /** A retry of `event` found it held by its timed-out run (again). */
  report(event: AnyPaymentEvent): void {
    const now = Date.now();
    const seen = this.waits.get(event.eventId);
    if (seen === undefined) {
      // the attempt's time-out was logged a moment ago
      if (this.waits.size >= MAX_WAITS_REPORTED) this.waits.clear();
      this.waits.set(event.eventId, { since: now, reportedAt: now });
      return;
    }
    if (now - seen.reportedAt < this.intervalMs) return;
    seen.reportedAt = now;
    this.logger.error(
      `${event.eventType} event ${event.eventId} (account ${this.account}) has waited ${Math.round((now - seen.since) / 1000)} s more ` +
        `for its handlers that outlived queueJobTimeoutMs: they keep the event while they run. If they hang, restart the worker ` +
        'process running them; the event then runs in another worker.',
    );
  }

  /** The event's job finished (completed, or failed for good): its wait is over. */
  forget(eventId: string): void {
    this.waits.delete(eventId);
  }
}
