import { monotonicNow } from '../common/monotonic-clock.util.js';

/**
 * Time source of the client: token expiry, rate-limit windows, backoff and `Retry-After`
 * waits all go through it, so tests can run minutes of service time instantly.
 * @publicApi
 */
export interface PaymentClock {
  /**
   * Milliseconds on an epoch-based scale, used for durations only (the system clock is
   * monotonic: it follows `performance.now()`, not steps of the wall clock).
   */
  now(): number;
  /**
   * Resolves after `ms` milliseconds of this clock, or as soon as `signal` aborts, at once when it
   * already has (the caller checks which): a call given up must not leave a timer of up to
   * `maxRetryAfterMs` behind.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemPaymentClock: PaymentClock = {
  // durations only: a wall-clock step must not stretch a rate-limit window or end a token early
  now: monotonicNow,
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      // 'abort' never fires again on a signal that already fired: its timer would be left behind
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
      function done(): void {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
    }),
};

/**
 * Optional runtime hooks of `PaymentGatewayService` (inject with token
 * `PAYMENT_CLIENT_RUNTIME`, or pass as the second constructor argument).
 * @publicApi
 */
export interface PaymentClientRuntime {
  clock: PaymentClock;
  /** Uniform in [0, 1): backoff jitter. */
  random: () => number;
}

