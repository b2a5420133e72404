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

/**
 * The runtime a client runs on: `runtime`'s parts, the system's for those it leaves out. One that
 * is not what it says (a test's `useMocker` that mocks every token, `PAYMENT_CLIENT_RUNTIME`
 * included, hands a mock whose `clock.now` answers nothing) is refused here, not at the first call.
 */
export function paymentClientRuntime(runtime: Partial<PaymentClientRuntime> | undefined): PaymentClientRuntime {
  const { clock = systemPaymentClock, random = Math.random } = runtime ?? {};
  if (typeof clock?.now !== 'function' || typeof clock.sleep !== 'function' || typeof random !== 'function' || nowIsMocked(clock)) {
    throw new TypeError(
      'The PAYMENT_CLIENT_RUNTIME given to PaymentGatewayService is not a Partial<PaymentClientRuntime> ({ clock: { now(), sleep() }, random() }). ' +
        'A test mocker (Test.createTestingModule().useMocker()) that mocks every token should return undefined for it.',
    );
  }
  return { clock, random };
}

/** Whether `clock.now()` answers nothing, as a deep mock's does; a test clock not started yet may throw or answer NaN: left to its first use. */
function nowIsMocked(clock: PaymentClock): boolean {
  try {
    return clock.now() === undefined;
  } catch {
    return false;
  }
}
