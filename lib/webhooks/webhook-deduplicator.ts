import { setMaxListeners } from 'node:events';
import type { LoggerService } from '@nestjs/common';
import { describeError } from '../common/error-message.util.js';
import { monotonicNow } from '../common/monotonic-clock.util.js';
import { withOptionalTimeout } from '../common/promise-timeout.util.js';
import { untilAborted } from '../common/until-aborted.util.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { assertClaimResult } from '../stores/webhook-event-store.validation.js';
import { PaymentWebhookHttpException, storeUnavailable } from './payment-webhook-http.exception.js';
import { WebhookEventInFlightError } from './payment-webhook.errors.js';
import { DEFAULT_COMPLETE_ATTEMPTS, type WebhookDeduplicationSettings, WorkOutcomeUnknown } from './webhook-deduplication.settings.js';
import { outsideTraceContext } from '../telemetry/outside-trace-context.js';
import { type TrackedWebhookClaim, WebhookLeaseRenewer } from './webhook-lease-renewer.js';

/** Longest pause between attempts at recording completion (25 ms, 50 ms, ... up to this). */
const COMPLETE_RETRY_MAX_DELAY_MS = 1000;
/** How long the route retries a completion after answering without it (see `keepCompleting`). */
const BACKGROUND_COMPLETION_MS = 15 * 60 * 1000;
/** Completions retried in the background at once, at most: beyond, one is given up (and logged). */
const MAX_BACKGROUND_COMPLETIONS = 1000;
/** Longest wait for one background attempt when the settings set none (the route's). */
const BACKGROUND_ATTEMPT_TIMEOUT_MS = 30_000;

/** What `run` returns when the key was processed before: the work did not run. */
export const ALREADY_PROCESSED: unique symbol = Symbol('nestjs-payment-gateway:already-processed');

/**
 * Runs work at most once per key across retries, duplicates and instances, with the
 * `WebhookEventStore` as the arbiter:
 * - first delivery → claim → work → completion recorded → the work's result;
 * - already processed → `ALREADY_PROCESSED`, work not run;
 * - held by another delivery → 409 `WEBHOOK_EVENT_IN_FLIGHT` (the sender retries later);
 * - work throws → claim released, error rethrown (the next delivery runs it again);
 * - store unreachable (or a late claim it cannot confirm) → 503 `WEBHOOK_STORE_UNAVAILABLE`, work not run.
 *
 * Shared by `PaymentWebhookProcessor` (the route and host routes), the queue worker and
 * `PaymentWebhookIdempotencyInterceptor`.
 */
export class WebhookDeduplicator {
  /** One renewal loop per lease and renewal limit (routes may differ in either). */
  private readonly renewers = new Map<string, WebhookLeaseRenewer>();
  /** The last settings object and its loop: callers pass the same object on every delivery. */
  private lastRenewal: { settings: WebhookDeduplicationSettings; renewer: WebhookLeaseRenewer } | undefined;
  /** Runs from the start of their claim to their outcome, and who waits for them to reach none (`whenIdle`). */
  private running = 0;
  /** Completions being retried in the background (`keepCompleting`). */
  private completing = 0;
  private readonly idleWaiters: Array<() => void> = [];
  /**
   * Aborted by `close()`: endless completion retries give up, and stop waiting on the store at
   * once, mid-attempt too. Any number of completions may wait on it through an outage.
   */
  private readonly closing = new AbortController();

  /** Errors of work whose claim could not be released, with why (see `unreleasedClaimOf`). */
  private readonly unreleased = new WeakMap<object, string>();

  constructor(
    private readonly store: WebhookEventStore,
    private readonly logger: LoggerService,
    /**
     * `logClaimFailures: false` when the caller logs the answer itself (the module's processor does); `foldReleaseFailures: true`
     * when that answer's log line also says a claim could not be released (see `unreleasedClaimOf`): one line per delivery.
     */
    private readonly options: { logClaimFailures?: boolean; foldReleaseFailures?: boolean } = {},
  ) {
    setMaxListeners(0, this.closing.signal);
  }

  /** Runs `work(arg)` at most once for `key` (the argument saves callers a closure per call). */
  async run<T, A = undefined>(
    key: string,
    settings: WebhookDeduplicationSettings,
    work: (arg: A) => Promise<T>,
    arg?: A,
  ): Promise<T | typeof ALREADY_PROCESSED> {
    // counted from before the claim: a claim still on its way when shutdown starts is a run
    // shutdown must wait for (its sender may have hung up, so the HTTP drain does not)
    this.running++;
    try {
      const claimSentAt = monotonicNow(); // the lease runs from here at the latest (the renewer's clock)
      let claim;
      try {
        claim = await this.store.claim(key, settings.leaseMs);
      } catch (error) {
        // Nothing ran yet: a non-2xx makes the sender retry, so nothing is lost.
        if (this.options.logClaimFailures !== false) this.logger.error(`Webhook event store unavailable while claiming an event: ${describeError(error)}`);
        throw storeUnavailable(error);
      }
      assertClaimResult(claim); // a custom store's boolean or other answer runs nothing (500)
      if (claim.outcome === 'processed') return ALREADY_PROCESSED;
      if (claim.outcome === 'in-flight') throw new PaymentWebhookHttpException(new WebhookEventInFlightError());
      // claimed after shutdown gave up on this run: nothing starts in a closing app (another worker or a retry runs it)
      if (this.closing.signal.aborted) {
        const released = await this.releaseQuietly(key, claim.claimToken, settings.completeTimeoutMs);
        throw this.noteUnreleased(storeUnavailable(new Error('the app is shutting down')), key, released);
      }
      const renewer = this.renewerFor(settings);
      // answered late, the claim may lapse before its first renewal (or be another copy's already): confirmed first (503 if the store fails)
      let heldSince: number | undefined = claimSentAt;
      if (renewer.mayHaveLapsed(claimSentAt)) heldSince = await renewer.confirmHeld(key, claim.claimToken).catch((error) => Promise.reject(storeUnavailable(error)));
      if (heldSince === undefined) throw new PaymentWebhookHttpException(new WebhookEventInFlightError());
      const tracked = renewer.track(key, claim.claimToken, heldSince);
      let result: T;
      try {
        result = await work(arg as A);
      } catch (error) {
        renewer.untrack(tracked);
        if (error instanceof WorkOutcomeUnknown) throw error.error; // the claim lapses with its lease
        throw this.noteUnreleased(error, key, await this.releaseQuietly(key, claim.claimToken, settings.completeTimeoutMs));
      }
      // the claim is renewed until its completion is recorded: retried through a store outage,
      // a lapsed lease would let another delivery claim the event and run it again
      const failure = await this.recordCompletion(key, claim.claimToken, settings);
      // the route's few attempts failed: on in the background (endless ones ended at shutdown)
      if (failure !== undefined && settings.completeAttempts !== Number.POSITIVE_INFINITY) {
        this.keepCompleting(key, claim.claimToken, settings, failure.error, tracked, () => renewer.untrack(tracked));
      } else {
        renewer.untrack(tracked);
      }
      return result;
    } finally {
      if (--this.running === 0 && this.idleWaiters.length > 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /**
   * After the route answered 2xx without its completion recorded (the store failed on every
   * attempt): retried in the background, at most a second apart, until the store answers, for
   * up to 15 minutes, the claim still renewed (a store that is up but fails completions keeps
   * the event's copies at 409). Left as it was, the key would keep the claim until its lease
   * lapsed, and a copy answered 409 during the run would run the handlers again on the service's
   * retry. Not a run shutdown waits for (with the store down it would wait for nothing):
   * `close()` ends the retries. `done` lets go of the claim's renewal.
   */
  private keepCompleting(key: string, claimToken: string, settings: WebhookDeduplicationSettings, error: unknown, tracked: TrackedWebhookClaim | undefined, done: () => void): void {
    const failed = `${completionNotRecorded(key, error)}answering 2xx so a retry does not run them again, `;
    const notRetried = this.closing.signal.aborted
      ? 'shutdown under way'
      : this.completing >= MAX_BACKGROUND_COMPLETIONS
        ? `${MAX_BACKGROUND_COMPLETIONS} completions are being retried already`
        : undefined;
    if (notRetried !== undefined) {
      this.logger.error(`${failed}not retried (${notRetried}). ${RUN_AGAIN}`);
      return done();
    }
    this.logger.error(`${failed}retrying in the background, at most a second apart, until the store answers (for up to 15 minutes)`);
    if (tracked !== undefined) tracked.completing = true;
    this.completing++;
    // after the answer: its store calls belong to no delivery's trace (the delivery's span has ended)
    const retries = outsideTraceContext(() => this.recordCompletion(key, claimToken, settings, monotonicNow() + BACKGROUND_COMPLETION_MS));
    void retries.finally(() => {
      this.completing--;
      done();
    });
  }

  /** Runs between the start of their claim and its outcome (completion recorded or claim released). */
  get runningCount(): number {
    return this.running;
  }

  /**
   * Resolves `true` once no run is between its claim and its outcome, `false` when runs are
   * still going after `timeoutMs`. At shutdown, before the store closes: a run whose sender
   * hung up is no longer part of the HTTP server's drain, and if its completion cannot be
   * recorded its event runs again on the next delivery.
   */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.running === 0) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const index = this.idleWaiters.indexOf(wake);
        if (index >= 0) this.idleWaiters.splice(index, 1);
        resolve(false);
      }, timeoutMs);
      this.idleWaiters.push(wake);
    });
  }

  /**
   * Shutdown's first step (before the HTTP server closes and the store with it): lets the
   * running deliveries of `owner` finish for up to `timeoutMs`, logging the wait and what
   * was given up. `shutdown` waits once more for those that started later.
   */
  async finishRunning(timeoutMs: number, owner: string): Promise<void> {
    const running = this.running;
    if (running === 0) return;
    this.logger.log(`Waiting up to ${timeoutMs} ms for ${running} running webhook delivery(ies) of ${owner}`);
    if (!(await this.whenIdle(timeoutMs))) {
      this.logger.warn(
        `${this.running} webhook delivery(ies) of ${owner} still running after ${timeoutMs} ms of shutdown${this.describeRunning()}; ` +
          'their claims stop being renewed when shutdown ends, so a later copy of those events may run their handlers again',
      );
    }
  }

  /**
   * Shutdown's last step, before the store closes: waits again (up to `timeoutMs`) for
   * deliveries that started after `finishRunning` (the server takes requests until it
   * drains, and a host's `beforeApplicationShutdown` delay keeps it open longer), since a
   * sender that hung up takes its request out of the drain; then stops lease renewal.
   */
  async shutdown(timeoutMs: number, owner: string): Promise<void> {
    await this.finishRunning(timeoutMs, owner);
    this.close();
  }

  /** The keys (`<account>:event:<eventId>`) of the running deliveries, the first ten: which events may run again. */
  private describeRunning(): string {
    const keys = [...this.renewers.values()].flatMap((renewer) => renewer.keys());
    if (keys.length === 0) return '';
    return ` (${keys.slice(0, 10).join(', ')}${keys.length > 10 ? `, and ${keys.length - 10} more` : ''})`;
  }

  /** Stops lease renewal (module shutdown). */
  close(): void {
    this.closing.abort(new Error('shutdown stopped waiting for the store'));
    for (const renewer of this.renewers.values()) renewer.close();
    this.renewers.clear();
    this.lastRenewal = undefined;
  }

  private renewerFor(settings: WebhookDeduplicationSettings): WebhookLeaseRenewer {
    if (this.lastRenewal?.settings === settings) return this.lastRenewal.renewer;
    const key = `${settings.leaseMs}/${settings.maxLeaseRenewalMs}`;
    let renewer = this.renewers.get(key);
    if (renewer === undefined) this.renewers.set(key, (renewer = new WebhookLeaseRenewer(this.store, settings.leaseMs, settings.maxLeaseRenewalMs, this.logger)));
    this.lastRenewal = { settings, renewer };
    return renewer;
  }

  /**
   * Marks the key processed after the work succeeded; the last error when the store kept
   * failing. The request is STILL answered 2xx then, on purpose: the handlers' effects already
   * happened, and any non-2xx makes the sender deliver again, which would repeat them (a refund
   * sent twice) as soon as the lease expires or the store recovers. The route goes on in the
   * background (`backgroundUntil`, see `keepCompleting`) until the store answers.
   *
   * The queue worker retries without limit instead (`completeAttempts: Infinity`): there
   * the job's own outcome is lost in the same outage, and BullMQ's stalled-job check is a
   * redelivery that would run the handlers again unless the completion gets recorded first.
   */
  private async recordCompletion(
    key: string,
    claimToken: string,
    settings: WebhookDeduplicationSettings,
    backgroundUntil?: number,
  ): Promise<{ error: unknown } | undefined> {
    // endless retries end with close(), even in the middle of an attempt or a pause: at shutdown the
    // worker must get the job recorded completed before it closes, or the job is taken over and run again
    const inBackground = backgroundUntil !== undefined;
    const endless = inBackground || settings.completeAttempts === Number.POSITIVE_INFINITY;
    const attempts = endless ? Number.POSITIVE_INFINITY : Math.max(1, settings.completeAttempts);
    // handlers given up at shutdown that finished after it: the worker is closed, its job cannot be recorded
    const finishedAfterShutdown = this.closing.signal.aborted;
    for (let attempt = 1; ; attempt++) {
      try {
        // a store that never answers must not hold a queue worker's slot, or a background retry, without a word
        const timeoutMs = settings.completeTimeoutMs ?? (inBackground ? BACKGROUND_ATTEMPT_TIMEOUT_MS : undefined);
        const completing = withOptionalTimeout(this.store.complete(key, claimToken, settings.retentionMs), timeoutMs);
        await (endless ? untilAborted(completing, this.closing.signal) : completing);
        if (attempt > 1 && endless) {
          this.logger.log(`Completion of webhook event "${key}" recorded after ${attempt} ${inBackground ? 'more ' : ''}attempts`);
        }
        return undefined;
      } catch (error) {
        const outOfTime = inBackground && monotonicNow() >= backgroundUntil;
        if (attempt >= attempts || outOfTime || this.closing.signal.aborted) return this.completionGivenUp(key, error, endless, inBackground, finishedAfterShutdown);
        if (attempt === DEFAULT_COMPLETE_ATTEMPTS && endless && !inBackground) {
          this.logger.error(
            `Handlers of webhook event "${key}" succeeded but completion could not be recorded yet ` +
              `(${describeError(error)}); retrying, at most a second apart, until the store answers, so a retry does not run them again`,
          );
        }
        await this.pause(Math.min(COMPLETE_RETRY_MAX_DELAY_MS, 25 * attempt), endless, inBackground);
        if (this.closing.signal.aborted) return this.completionGivenUp(key, error, endless, inBackground, finishedAfterShutdown);
      }
    }
  }

  /** The last failure; said here where retries end for good (the route's first three: by `keepCompleting`). */
  private completionGivenUp(key: string, error: unknown, endless: boolean, inBackground: boolean, finishedAfterShutdown: boolean): { error: unknown } {
    if (endless && finishedAfterShutdown && !inBackground) {
      this.logger.error(`${completionNotRecorded(key, error)}the app had shut down before they finished, so neither their completion nor the job's outcome can be recorded: the event is left to another worker (or the next start), which runs the handlers again.`);
    } else if (endless) {
      const outcome = !inBackground
        ? 'the job is recorded completed (where the queue\'s Redis can take it) so a retry does not run the handlers again'
        : this.closing.signal.aborted
          ? 'shutdown stopped the retries'
          : 'the retries ended after 15 minutes';
      this.logger.error(`${completionNotRecorded(key, error)}${outcome}. ${RUN_AGAIN}`);
    }
    return { error };
  }

  /** Waits `ms`; with `endsOnClose`, no longer than until `close()`; `unref`: without holding the process open. */
  private pause(ms: number, endsOnClose: boolean, unref = false): Promise<void> {
    return new Promise<void>((resolve) => {
      const signal = this.closing.signal;
      const end = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', end);
        resolve();
      };
      const timer = setTimeout(end, ms);
      if (unref) timer.unref();
      if (endsOnClose) signal.addEventListener('abort', end, { once: true });
    });
  }

  /**
   * After failed work: free the key so the redelivery runs it. If this fails, the lease expires on
   * its own. Bounded like completion where `timeoutMs` is set (the queue worker): a custom store
   * whose release never answers must not hold the run, its worker slot and shutdown.
   */
  private async releaseQuietly(key: string, claimToken: string, timeoutMs?: number): Promise<string | undefined> {
    try {
      await withOptionalTimeout(this.store.release(key, claimToken), timeoutMs);
      return undefined;
    } catch (error) {
      return describeError(error);
    }
  }

  /** `error`, once said why its claim is still held (if it is): in the caller's line (`foldReleaseFailures`), else a warning. */
  private noteUnreleased(error: unknown, key: string, notReleased: string | undefined): unknown {
    if (notReleased === undefined) return error;
    if (this.options.foldReleaseFailures === true && typeof error === 'object' && error !== null) this.unreleased.set(error, notReleased);
    else this.logger.warn(`Could not release the claim of webhook event "${key}" (${notReleased}); it becomes claimable when its lease expires`);
    return error;
  }

  /** Why the claim of the work that failed with `error` is still held, if it is (`foldReleaseFailures`). */
  unreleasedClaimOf(error: unknown): string | undefined {
    return typeof error === 'object' && error !== null ? this.unreleased.get(error) : undefined;
  }
}

/** What completion failures say first. */
function completionNotRecorded(key: string, error: unknown): string {
  return `Handlers of webhook event "${key}" succeeded but completion could not be recorded (${describeError(error)}); `;
}

/** What a completion given up risks. */
const RUN_AGAIN = 'A duplicate delivery arriving after the lease expires would run them again.';
