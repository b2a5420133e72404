/**
 * Time source of the client: token expiry, rate-limit windows, backoff and `Retry-After`
 * waits all go through it, so tests can run minutes of service time instantly.
 * @publicApi
 */
export interface PaymentClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds of this clock. */
  sleep(ms: number): Promise<void>;
}

export const systemPaymentClock: PaymentClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
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

