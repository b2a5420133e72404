import type { LoggerService } from '@nestjs/common';
import { asPromise } from '../common/as-promise.util.js';
import { describeError } from '../common/error-message.util.js';
import { monotonicNow } from '../common/monotonic-clock.util.js';
import { withTimeout } from '../common/promise-timeout.util.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { outsideTraceContext } from '../telemetry/outside-trace-context.js';

/** One claim kept alive while its handlers run. */
export interface TrackedWebhookClaim {
  readonly key: string;
  readonly claimToken: string;
  readonly startedAt: number;
  /** When the store last confirmed the lease (the time the renewal was sent). */
  renewedAt: number;
  /** Earliest time of the next renewal attempt. */
  nextAttemptAt: number;
  renewing: boolean;
  /** The handlers finished; their completion is being retried (the claim is still renewed). */
  completing?: boolean;
  /** Renewals failed in a row (the store unreachable), and whether the lease lapsed meanwhile: each said once. */
  failedRenewals?: number;
  lapsed?: boolean;
}

/**
 * Keeps the claims of running handlers alive with ONE timer for all of them (not one per
 * delivery): every sixth of the lease it renews each claim whose last renewal is a sixth of
 * the lease old, so renewals are at most a third of the lease apart and an event loop pause
 * of up to about two thirds of the lease leaves the claim alive: a slow handler keeps its
 * event and a concurrent copy still gets 409. The lease is counted from when the claim was sent.
 *
 * - A renewal the store refuses (the claim was lost) stops renewing that claim.
 * - A renewal that fails (store time-out), or does not answer within a third of the lease (a
 *   custom store that hangs), is tried again a sixth of a lease later, also once the lease has
 *   lapsed: when the store itself was down nobody could claim the event meanwhile, and the first
 *   renewal it answers takes the free key back. When only this process was cut off from a store
 *   others still reached, one of them may have claimed the event after the lease: the renewal then
 *   finds it held (lost, said at `error`). Size the lease above the longest partition to expect.
 * - Renewal stops after `maxRenewalMs`, so a hung handler cannot block its event for good.
 *
 * Does nothing for stores without `extend`. The timer is unref'd and stops when no claim is tracked;
 * it runs outside every delivery's trace context (its store calls belong to no single delivery).
 */
export class WebhookLeaseRenewer {
  private readonly claims = new Set<TrackedWebhookClaim>();
  private timer: NodeJS.Timeout | undefined;
  /** The timer's period and the age at which a claim is renewed: a sixth of the lease. */
  private readonly renewEveryMs: number;
  /** How long a renewal may take to answer before it counts as failed: a third of the lease. */
  private readonly answerWithinMs: number;

  constructor(
    private readonly store: WebhookEventStore,
    private readonly leaseMs: number,
    private readonly maxRenewalMs: number,
    private readonly logger: LoggerService,
    private readonly now: () => number = monotonicNow,
  ) {
    this.renewEveryMs = Math.max(1, Math.floor(leaseMs / 6));
    this.answerWithinMs = Math.max(1, Math.floor(leaseMs / 3));
  }

  /**
   * Whether a claim sent at `claimSentAt` (this renewer's clock) may lapse before its first
   * renewal lands: one answered two thirds of a lease or more after it was sent (another delivery
   * may hold it by then). Such a claim is confirmed with `confirmHeld` before anything runs.
   */
  mayHaveLapsed(claimSentAt: number): boolean {
    return this.store.extend !== undefined && this.now() >= claimSentAt + this.leaseMs - this.answerWithinMs;
  }

  /**
   * Renews the claim once: the time the renewal was sent (the lease now runs from there; pass it to
   * `track`), or `undefined` when the claim is no longer `claimToken`'s. Rejects when the store
   * fails or does not answer within a third of the lease (a hung store must not hold the delivery).
   */
  async confirmHeld(key: string, claimToken: string): Promise<number | undefined> {
    const sentAt = this.now();
    const held = await this.extendWithin(key, claimToken);
    return held ? sentAt : undefined;
  }

  /** One `extend` of the claim, failed when the store does not answer within a third of the lease. */
  private extendWithin(key: string, claimToken: string): Promise<boolean> {
    // a store that throws instead of rejecting becomes a rejection
    const renewal = asPromise(() => this.store.extend!(key, claimToken, this.leaseMs));
    return withTimeout(renewal, this.answerWithinMs, () => new Error(`the store did not answer within ${this.answerWithinMs} ms`));
  }

  /** Starts renewing `key`'s claim, sent at `claimSentAt`; call `untrack` with the result when the handlers are done. */
  track(key: string, claimToken: string, claimSentAt = this.now()): TrackedWebhookClaim | undefined {
    if (this.store.extend === undefined) return undefined;
    const claim: TrackedWebhookClaim = {
      key,
      claimToken,
      startedAt: claimSentAt,
      renewedAt: claimSentAt,
      nextAttemptAt: claimSentAt + this.renewEveryMs,
      renewing: false,
    };
    this.claims.add(claim);
    if (this.timer === undefined) {
      // started by some delivery, it serves them all: detached from that delivery's trace context
      this.timer = outsideTraceContext(() => setInterval(() => this.tick(), this.renewEveryMs));
      this.timer.unref();
    }
    return claim;
  }

  untrack(claim: TrackedWebhookClaim | undefined): void {
    if (claim !== undefined) this.claims.delete(claim);
  }

  /** The keys of the claims being renewed (the running deliveries), for a shutdown report. */
  keys(): string[] {
    return [...this.claims].filter((claim) => claim.completing !== true).map((claim) => claim.key);
  }

  /** Claims being renewed right now (for tests). */
  get size(): number {
    return this.claims.size;
  }

  /** Stops the timer; tracked claims then expire on their own. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.claims.clear();
  }

  private tick(): void {
    if (this.claims.size === 0) {
      // Idle: stop until the next claim (kept running under load instead of per delivery).
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = this.now();
    for (const claim of this.claims) {
      if (claim.renewing || now < claim.nextAttemptAt) continue;
      if (now - claim.startedAt >= this.maxRenewalMs) {
        this.claims.delete(claim);
        this.logger.error(
          claim.completing === true
            ? `Completion of webhook event "${claim.key}" is still being retried; no longer renewing its claim`
            : `Handlers of webhook event "${claim.key}" are still running; no longer renewing its claim`,
        );
        continue;
      }
      this.renew(claim, now);
    }
  }

  private renew(claim: TrackedWebhookClaim, sentAt: number): void {
    claim.renewing = true;
    // bounded: a renewal that never settled would leave `renewing` set and the lease to lapse unseen
    this.extendWithin(claim.key, claim.claimToken).then(
      (renewed) => {
        claim.renewing = false;
        if (renewed) {
          claim.renewedAt = sentAt;
          claim.nextAttemptAt = sentAt + this.renewEveryMs;
          if (claim.failedRenewals !== undefined && this.claims.has(claim)) {
            this.logger.log(`The claim of webhook event "${claim.key}" is renewed again, after ${claim.failedRenewals} failed attempt(s)`);
            claim.failedRenewals = undefined;
            claim.lapsed = undefined;
          }
        } else if (this.claims.delete(claim)) {
          // another delivery or worker claimed it after the lease lapsed: it may run the handlers beside these
          this.logger.error(`The claim of webhook event "${claim.key}" was lost while its handlers ran: another delivery may run them a second time`);
        }
      },
      (error: unknown) => {
        claim.renewing = false;
        if (!this.claims.has(claim)) return;
        // Past the lease it is tried again all the same: if the store itself was down nobody could claim
        // the event, and the first renewal it answers takes the free key back (a copy then gets 409);
        // else it finds another holder (lost). Said when renewals start failing and when the lease lapses.
        const lapsed = this.now() >= claim.renewedAt + this.leaseMs;
        claim.failedRenewals = (claim.failedRenewals ?? 0) + 1;
        if (claim.failedRenewals === 1 || (lapsed && claim.lapsed !== true)) {
          this.logger.warn(
            `Could not renew the claim of webhook event "${claim.key}" (${describeError(error)}); ` +
              (lapsed ? 'its lease has lapsed, so another delivery may run it again; still trying to take it back' : 'retrying'),
          );
        }
        if (lapsed) claim.lapsed = true;
        // at the next tick: a renewal given up after a third of the lease still has time
        claim.nextAttemptAt = this.now() + this.renewEveryMs;
      },
    );
  }
}
