import { inspect, type InspectOptions } from 'node:util';
import { Injectable } from '@nestjs/common';
import type { PaymentRateLimits } from '../config/payment-module-options.interface.js';
import type { PaymentClock } from './payment-client.clock.js';
import { inspectSummary } from '../common/inspect-summary.util.js';

/** The service's limits count requests per rolling minute. */
const RATE_LIMIT_WINDOW_MS = 60_000;
/** Extra wait past a window's end, so a boundary request never lands inside the service's window. */
const WINDOW_MARGIN_MS = 50;

/**
 * Call when the request's answer (or failure) arrived. Idempotent. `holdMs` keeps the
 * slot stamped that much later (a request given up on may still reach the service);
 * `pauseMs` holds every request of the bucket that long (the service asked for a pause);
 * `sent: false` gives the slot back uncounted (the call ended before its request went out:
 * aborted, or its token could not be had), since the window counts requests the service saw.
 */
export type RateLimitRelease = (holdMs?: number, pauseMs?: number, sent?: boolean) => void;

/**
 * The pause a 429's `Retry-After` asks of its whole bucket: the other calls counted in it would
 * only meet the same 429 (and spend their retries) before it ends. None past `maxMs`: the call
 * fails at once then, and the others do not wait longer than a call would.
 */
export function rateLimitPauseMs(answer: { status: number; retryAfterSeconds: number | undefined } | undefined, maxMs: number): number {
  if (answer?.status !== 429 || answer.retryAfterSeconds === undefined) return 0;
  const pauseMs = answer.retryAfterSeconds * 1000;
  return pauseMs > maxMs ? 0 : Math.max(0, pauseMs);
}

/**
 * Rolling-window limiter with a FIFO queue: at most `limit` requests in any window.
 * A slot is stamped when its request FINISHES, not when it starts: the service saw the
 * request somewhere between the two, so counting from the end can never undercount
 * what the service counted, whatever the latency.
 */
export class SlidingWindowLimiter {
  private readonly finishedAt: number[] = [];
  /** No request goes out before this time (a 429's `Retry-After`). */
  private pausedUntil = Number.NEGATIVE_INFINITY;
  private inFlight = 0;
  private readonly queue: Array<(release: RateLimitRelease) => void> = [];
  private pumping = false;
  private releaseSignal: (() => void) | undefined;
  /** Ends the pump's wait for the window when the last queued caller leaves. */
  private windowWait: AbortController | undefined;

  constructor(
    private limitValue: number,
    private readonly windowMs: number,
    private readonly clock: PaymentClock,
  ) {}

  get limit(): number {
    return this.limitValue;
  }

  /** Lowers the limit (a shared line allows the lowest limit of those using it); never raises it. */
  tighten(limit: number): void {
    this.limitValue = Math.min(this.limitValue, limit);
  }

  /** Waits until a slot is free; rejects with the signal's reason (leaving the queue) when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<RateLimitRelease> {
    return new Promise((resolve, reject) => {
      if (signal === undefined) {
        this.queue.push(resolve);
        void this.pump();
        return;
      }
      if (signal.aborted) return reject(signal.reason);
      const waiter = (release: RateLimitRelease) => {
        signal.removeEventListener('abort', onAbort);
        resolve(release);
      };
      const onAbort = () => {
        const at = this.queue.indexOf(waiter);
        if (at === -1) return;
        this.queue.splice(at, 1);
        // nobody left to wait for (aborted, or app.close()): the window's timer must not keep the process alive
        if (this.queue.length === 0) this.windowWait?.abort();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      void this.pump();
    });
  }

  toJSON(): Record<string, unknown> {
    return { limit: this.limit, inFlight: this.inFlight, queued: this.queue.length, inWindow: this.finishedAt.length };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('SlidingWindowLimiter', this.toJSON(), depth, options);
  }

  /** True when nothing is queued, in flight or inside the window (the limiter can be dropped). */
  isIdle(): boolean {
    this.prune(this.clock.now());
    return this.queue.length === 0 && this.inFlight === 0 && this.finishedAt.length === 0 && this.pausedUntil <= this.clock.now();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const now = this.clock.now();
        this.prune(now);
        if (now < this.pausedUntil) {
          await this.sleepWhileQueued(this.pausedUntil - now);
          continue;
        }
        if (this.finishedAt.length + this.inFlight < this.limit) {
          this.inFlight++;
          this.queue.shift()!(this.makeRelease());
          continue;
        }
        if (this.finishedAt.length === 0) {
          // Every slot is held by a request still running: its end starts the window.
          await new Promise<void>((resolve) => (this.releaseSignal = resolve));
        } else {
          await this.sleepWhileQueued(this.finishedAt[0] + this.windowMs + WINDOW_MARGIN_MS - now);
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Sleeps `ms`, or until the last queued caller leaves. */
  private async sleepWhileQueued(ms: number): Promise<void> {
    // not unref'd instead: a queued caller waits on this timer alone, a script would exit under it
    const wait = (this.windowWait = new AbortController());
    await this.clock.sleep(ms, wait.signal);
    if (this.windowWait === wait) this.windowWait = undefined;
  }

  private makeRelease(): RateLimitRelease {
    let released = false;
    return (holdMs = 0, pauseMs = 0, sent = true) => {
      if (released) return;
      released = true;
      this.inFlight--;
      if (pauseMs > 0) this.pausedUntil = Math.max(this.pausedUntil, this.clock.now() + pauseMs);
      if (sent) {
        const at = this.clock.now() + Math.max(0, holdMs);
        // keep sorted even if the clock steps back
        let i = this.finishedAt.length;
        while (i > 0 && this.finishedAt[i - 1] > at) i--;
        this.finishedAt.splice(i, 0, at);
      }
      const signal = this.releaseSignal;
      this.releaseSignal = undefined;
      signal?.();
    };
  }

  private prune(now: number): void {
    while (this.finishedAt.length > 0 && this.finishedAt[0] + this.windowMs + WINDOW_MARGIN_MS <= now) {
      this.finishedAt.shift();
    }
  }
}

/** Which of the service's limits a request counts against. */
export type RateLimitScope = 'token' | 'create-payment' | 'read' | 'money-movement' | 'none';

/**
 * Limiters by key (a scope and client id, or the service's origin); a new key first drops the
 * idle ones, so the pool holds only keys with calls in their window.
 */
export class LimiterPool {
  private readonly limiters = new Map<string, SlidingWindowLimiter>();

  get(key: string, create: () => SlidingWindowLimiter): SlidingWindowLimiter {
    let limiter = this.limiters.get(key);
    if (!limiter) {
      for (const [idleKey, idle] of this.limiters) if (idle.isIdle()) this.limiters.delete(idleKey);
      limiter = create();
      this.limiters.set(key, limiter);
    }
    return limiter;
  }

  get size(): number {
    return this.limiters.size;
  }

  /** The count only: keys name clients. */
  toJSON(): Record<string, unknown> {
    return { buckets: this.limiters.size };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('LimiterPool', this.toJSON(), depth, options);
  }
}

/**
 * The buckets of the limit the service counts per IP (token calls, 10 a minute): one
 * instance per app, provided by the core module, so the accounts of an app queue in one
 * line per service origin instead of each spending the whole limit. A line allows the
 * lowest `tokenPerMinute` of the accounts using it. The other limits count per access
 * token or per client: each account keeps those. Clients on different clocks (tests'
 * fake clocks) never share a line.
 */
@Injectable()
export class PaymentIpRateLimits {
  private readonly byClock = new WeakMap<PaymentClock, { pool: LimiterPool; lowest: Map<string, number> }>();

  /**
   * An account's token limit counts on its origin's line from the account's start, not from its
   * first call, and stays when the idle line is dropped (a line made again allows no more).
   */
  declare(origin: string, limit: number, clock: PaymentClock): number {
    const { lowest } = this.linesOf(clock);
    const allowed = Math.min(limit, lowest.get(origin) ?? limit);
    lowest.set(origin, allowed);
    return allowed;
  }

  line(origin: string, limit: number, windowMs: number, clock: PaymentClock): SlidingWindowLimiter {
    const allowed = this.declare(origin, limit, clock);
    const line = this.linesOf(clock).pool.get(origin, () => new SlidingWindowLimiter(allowed, windowMs, clock));
    line.tighten(allowed);
    return line;
  }

  private linesOf(clock: PaymentClock): { pool: LimiterPool; lowest: Map<string, number> } {
    let lines = this.byClock.get(clock);
    if (!lines) this.byClock.set(clock, (lines = { pool: new LimiterPool(), lowest: new Map() }));
    return lines;
  }
}

/**
 * Client-side queue for every limit of the service (tokens 10/min per IP, creations 30/min
 * per token, reads 60/min per token, refunds/payouts/subaccounts 30/min per client). The
 * caller picks the bucket key of each call (the executor: the service's origin for token
 * calls, the client id for the others). Token calls go through `perIp`, shared with the
 * app's other accounts when given (an account with `rateLimits: false` neither waits nor
 * counts there). Limits come validated from the resolved options.
 */
export class PaymentRateLimiter {
  private readonly limiters = new LimiterPool();

  constructor(
    private readonly limits: PaymentRateLimits | false,
    private readonly clock: PaymentClock,
    private readonly perIp: PaymentIpRateLimits = new PaymentIpRateLimits(),
    /** The service's origin, whose shared token line this client's limit tightens at once. */
    ipLineKey?: string,
  ) {
    if (limits !== false && ipLineKey !== undefined) perIp.declare(ipLineKey, limits.tokenPerMinute, clock);
  }

  async acquire(scope: RateLimitScope, key: string, signal?: AbortSignal): Promise<RateLimitRelease> {
    const limit = this.limitFor(scope);
    if (limit === undefined) return () => undefined;
    const limiter =
      scope === 'token'
        ? this.perIp.line(key, limit, RATE_LIMIT_WINDOW_MS, this.clock)
        : this.limiters.get(`${scope}\u0000${key}`, () => new SlidingWindowLimiter(limit, RATE_LIMIT_WINDOW_MS, this.clock));
    return limiter.acquire(signal);
  }

  /** Number of live buckets of this client (idle ones are dropped; the shared per-IP ones are not counted). */
  get bucketCount(): number {
    return this.limiters.size;
  }

  /** Limits and bucket count; bucket keys are left out (they name the client). */
  toJSON(): Record<string, unknown> {
    return { limits: this.limits, buckets: this.limiters.size };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentRateLimiter', this.toJSON(), depth, options);
  }

  private limitFor(scope: RateLimitScope): number | undefined {
    if (this.limits === false || scope === 'none') return undefined;
    switch (scope) {
      case 'token':
        return this.limits.tokenPerMinute;
      case 'create-payment':
        return this.limits.createPaymentPerMinute;
      case 'read':
        return this.limits.readsPerMinute;
      case 'money-movement':
        return this.limits.moneyMovementPerMinute;
    }
  }
}
