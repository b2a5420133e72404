import { inspect, type InspectOptions } from 'node:util';
import { REDACTED } from '../common/redaction.util.js';
import type { PaymentTokenResponseOptions } from '../config/payment-module-options.interface.js';
import { PaymentAbortedError, PaymentApiError, PaymentClientErrorCode, PaymentServerError } from './payment-api.errors.js';
import type { PaymentClock } from './payment-client.clock.js';
import { retryAfterMsOf } from './payment-retry.policy.js';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { untilAborted } from '../common/until-aborted.util.js';

/** What the token endpoint gave: the token and its lifetime. */
export interface IssuedToken {
  token: string;
  expiresInSeconds: number;
  /** Clock time the token request was sent: its lifetime starts no earlier. */
  sentAt?: number;
}

/** The health checks' shared token request, and who still waits for it. */
interface SharedCheck {
  promise: Promise<string>;
  /** Gives the request up (while it waits for its slot) once no caller waits any more. */
  controller: AbortController;
  /** Callers with a signal still waiting. */
  waiting: number;
  /** A caller without a signal waits: the request is never given up. */
  unbounded: boolean;
}

interface CachedToken {
  token: string;
  /** When the cached token stops being handed out (expiry minus the refresh margin). */
  reuseUntil: number;
}

/** How many recent tokens are remembered for redaction of error text. */
const REMEMBERED_TOKENS = 16;
/** How long a failed check (`checkToken`) is answered again without a new token request. */
const CHECK_FAILURE_HOLD_MS = 30_000;
/** The longest hold a refusal's `Retry-After` stretches it to (a token's lifetime): an absurd one must not hold it for days. */
const CHECK_FAILURE_MAX_HOLD_MS = 600_000;

/** How long the check's failure is answered again: 30 s, or as long as the refusal's `Retry-After` asked (up to 10 minutes). */
function checkFailureHoldMs(error: unknown): number {
  const askedMs = error instanceof PaymentApiError ? retryAfterMsOf(error) : undefined;
  return askedMs !== undefined && askedMs > CHECK_FAILURE_HOLD_MS ? Math.min(askedMs, CHECK_FAILURE_MAX_HOLD_MS) : CHECK_FAILURE_HOLD_MS;
}

/**
 * Access tokens (valid 10 minutes). Payment creations always get a token requested for them
 * (the service wants a new token before each payment); every other call reuses
 * the cached token until `refreshMarginSeconds` before it expires. Callers that find no
 * usable token while a request for one is running wait for that request instead of
 * starting another.
 */
export class PaymentTokenManager {
  // True private fields: tokens are reachable by no property walk, inspect or JSON.
  #cached: CachedToken | undefined;
  #inFlight: Promise<string> | undefined;
  /** Settles the shared request's callers with a token another request cached meanwhile (see `fetchShared`). */
  #whenCached: ((token: string) => void) | undefined;
  /** A health check's own token request (one attempt), which `getToken` waits for before asking itself. */
  #check: SharedCheck | undefined;
  /** The last failed check and until when it is answered again without a new request. */
  #checkFailed: { error: unknown; until: number } | undefined;
  readonly #recent: string[] = [];

  constructor(
    private readonly requestToken: (signal?: AbortSignal, once?: boolean) => Promise<IssuedToken>,
    private readonly clock: PaymentClock,
    private readonly options: Pick<PaymentTokenResponseOptions, 'refreshMarginSeconds'>,
  ) {}

  /** A token for a read or money movement: cached if still good, else one shared new request. */
  getToken(): Promise<string> {
    const cached = this.usableToken();
    if (cached !== undefined) return Promise.resolve(cached);
    this.#inFlight ??= this.fetchShared().finally(() => (this.#inFlight = undefined));
    return this.#inFlight;
  }

  /**
   * The shared request, answered early by a token another request caches while this one still
   * waits for its slot (a payment creation's, which gets its own: 20 of them queued on the token
   * line ahead would hold every read for two minutes); given up then if not yet sent.
   */
  private fetchShared(): Promise<string> {
    const giveUp = new AbortController();
    let settleEarly!: (token: string) => void;
    const early = new Promise<string>((resolve) => (settleEarly = resolve));
    const whenCached = (token: string): void => {
      settleEarly(token);
      giveUp.abort(); // only while it waits for its slot: a token request is never cut on the wire
    };
    this.#whenCached = whenCached;
    const own = this.fetchAfterCheck(giveUp.signal).catch((error: unknown) => {
      if (giveUp.signal.aborted) return early;
      throw error;
    });
    return Promise.race([own, early]).finally(() => {
      if (this.#whenCached === whenCached) this.#whenCached = undefined;
    });
  }

  /** The check's request when one is under way (one token call, not two); the call's own, with retries, if it failed. */
  private async fetchAfterCheck(signal?: AbortSignal): Promise<string> {
    const checking = this.#check;
    if (checking !== undefined) {
      try {
        return await checking.promise;
      } catch {
        // a single attempt, or given up by the check's time-out: this caller asks with its retries
      }
    }
    return this.fetch(signal);
  }

  /**
   * A token requested for this caller alone (payment creation), given up with `signal` (while
   * it waits for its slot: a token request is never cut on the wire). It also refreshes the cache.
   */
  getFreshToken(signal?: AbortSignal): Promise<string> {
    return this.fetch(signal);
  }

  /**
   * For the health check: the cached token, the request already under way, or one request of
   * its own with a single attempt. Concurrent checks share that request; each caller gives up
   * its own wait with its `signal` (rejecting with the signal's reason), and the request is
   * given up (while it waits for its slot: a token request is never cut on the wire) only once
   * every caller has; a request already sent is still shared by later checks. The service's
   * refusal is answered again for `CHECK_FAILURE_HOLD_MS` (longer when its `Retry-After` says so); a request given up before it was sent is not.
   */
  checkToken(signal?: AbortSignal): Promise<string> {
    const cached = this.usableToken();
    if (cached !== undefined) return Promise.resolve(cached);
    if (this.#inFlight !== undefined) return untilAborted(this.#inFlight, signal);
    // a failure is answered again for a while: each request counts against the token limit the app needs
    if (this.#checkFailed !== undefined && this.clock.now() < this.#checkFailed.until) return Promise.reject(this.#checkFailed.error);
    if (signal?.aborted) return Promise.reject(signal.reason);
    const given = this.#check;
    if (given !== undefined && given.controller.signal.aborted) {
      // Every caller gave it up. Still waiting for its slot, it ends as an abort and a new check
      // starts; already on the wire (never cut), its answer is this caller's too.
      const retried = given.promise.catch((error: unknown) => {
        if (error instanceof PaymentAbortedError) return this.checkToken(signal);
        throw error;
      });
      return untilAborted(retried, signal);
    }
    const check = (this.#check ??= this.startCheck());
    if (signal === undefined) {
      check.unbounded = true; // a caller that never gives up keeps the request going
      return check.promise;
    }
    check.waiting++;
    const leave = () => {
      if (--check.waiting > 0 || check.unbounded) return;
      check.controller.abort(signal.reason);
    };
    signal.addEventListener('abort', leave, { once: true });
    const mine = untilAborted(check.promise, signal);
    void mine.then(
      () => signal.removeEventListener('abort', leave),
      () => signal.removeEventListener('abort', leave),
    );
    return mine;
  }

  private startCheck(): SharedCheck {
    const controller = new AbortController();
    const check: SharedCheck = { controller, waiting: 0, unbounded: false, promise: Promise.resolve('') };
    check.promise = this.fetch(controller.signal, true)
      .then(
        (token) => {
          this.#checkFailed = undefined;
          return token;
        },
        (error: unknown) => {
          // given up before it was sent: not the service's answer, so nothing to hold
          if (!(error instanceof PaymentAbortedError)) this.#checkFailed = { error, until: this.clock.now() + checkFailureHoldMs(error) };
          throw error;
        },
      )
      .finally(() => {
        if (this.#check === check) this.#check = undefined;
      });
    // a caller that gave up no longer awaits it
    check.promise.catch(() => undefined);
    return check;
  }

  /** The cached token while it may still be used. */
  private usableToken(): string | undefined {
    return this.#cached !== undefined && this.clock.now() < this.#cached.reuseUntil ? this.#cached.token : undefined;
  }

  /** Drops `token` from the cache after the service rejected it (PAY_1002 / PAY_1003). */
  invalidate(token: string): void {
    if (this.#cached?.token === token) this.#cached = undefined;
  }

  /** Tokens issued lately (a copy); the client scrubs them from any error text. */
  knownTokens(): readonly string[] {
    return [...this.#recent];
  }

  /** State without the tokens themselves. */
  toJSON(): Record<string, unknown> {
    return {
      cachedToken: this.#cached ? REDACTED : undefined,
      // the clock measures durations: shown as wall-clock time from how long is left
      reusableUntil: this.#cached ? new Date(Date.now() + (this.#cached.reuseUntil - this.clock.now())).toISOString() : undefined,
      requestInFlight: this.#inFlight !== undefined,
    };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentTokenManager', this.toJSON(), depth, options);
  }

  private async fetch(signal?: AbortSignal, once?: boolean): Promise<string> {
    const asked = this.clock.now();
    const issued = await this.requestToken(signal, once);
    // The service's 10 minutes start no earlier than the request left, which may be long after it
    // was asked for (a wait for a token slot): stamped then, the token would be renewed early.
    const requestedAt = issued.sentAt ?? asked;
    const lifetimeMs = issued.expiresInSeconds * 1000;
    // A margin as long as the lifetime would make every token unusable at once.
    const marginMs = Math.min(this.options.refreshMarginSeconds * 1000, lifetimeMs / 2);
    const reuseUntil = requestedAt + lifetimeMs - marginMs;
    if (!this.#cached || reuseUntil >= this.#cached.reuseUntil) this.#cached = { token: issued.token, reuseUntil };
    const usable = this.usableToken();
    if (usable !== undefined) this.#whenCached?.(usable);
    // the service gives tokens again: a held check failure is over (not only while this one is reused)
    this.#checkFailed = undefined;
    this.#recent.push(issued.token);
    if (this.#recent.length > REMEMBERED_TOKENS) this.#recent.shift();
    return issued.token;
  }
}

/** What Node's HTTP client accepts in a header value: tab, visible ASCII, space and Latin-1. */
const HEADER_SAFE = /^[\t\x20-\x7e\x80-\xff]+$/;

/**
 * Reads the token call's `data` (its fields are not published): the first present field
 * of `tokenFields`, lifetime from `expiresInField` (at most `maxExpiresInSeconds`) or the default.
 */
export function parseTokenData(data: unknown, options: PaymentTokenResponseOptions, path: string, account?: string): IssuedToken {
  const unexpected = (answered: string) =>
    new PaymentServerError({ account, code: PaymentClientErrorCode.UNEXPECTED_RESPONSE, message: `POST ${path} answered ${answered}`, method: 'POST', path });
  const record = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
  const token = options.tokenFields.map((field) => record[field]).find((v) => typeof v === 'string' && v.length > 0);
  if (typeof token !== 'string') {
    throw unexpected(`without a token in any of data.${options.tokenFields.join(', data.')} (set tokenResponse.tokenFields)`);
  }
  // Node refuses such a header before sending: the call would fail as a network error said to have maybe reached the service
  if (!HEADER_SAFE.test(token)) {
    throw unexpected('a token that cannot be sent in an Authorization header (control characters or characters beyond Latin-1)');
  }
  const rawExpiry = record[options.expiresInField];
  const expiresIn = typeof rawExpiry === 'string' ? Number(rawExpiry) : rawExpiry;
  const expiresInSeconds =
    typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
      ? Math.min(expiresIn, options.maxExpiresInSeconds)
      : options.defaultExpiresInSeconds;
  return { token, expiresInSeconds };
}
