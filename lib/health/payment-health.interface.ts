/** State of a checked component, as `@nestjs/terminus` reads it. @publicApi */
export type PaymentHealthStatus = 'up' | 'down';

/** One component's state with its details (`kind`, `url`, `latencyMs`, `reason`, ...). @publicApi */
export interface PaymentHealthComponentState {
  status: PaymentHealthStatus;
  [detail: string]: unknown;
}

/**
 * What `PaymentHealthIndicator.isHealthy(key)` resolves with: `{ [key]: { status, ... } }`,
 * the shape of terminus' `HealthIndicatorResult` (assignable to it on terminus 11 and 12).
 * Down is returned, never thrown, so `HealthCheckService.check` answers 503 with the details.
 * @publicApi
 */
export type PaymentHealthIndicatorResult<K extends string = string> = Record<
  K,
  {
    status: PaymentHealthStatus;
    /** When down: every failed component, as `<account>/<component>: <reason>`, joined by `; `. */
    reason?: string;
    /** Per account, per component (`store`, `authentication`, ...). */
    accounts: Record<string, Record<string, PaymentHealthComponentState>>;
  }
>;

/** @publicApi */
export interface PaymentHealthCheckOptions {
  /** Accounts to check (names given to `forRoot({ account })`, `'default'` without one). @default every account */
  accounts?: readonly string[];
  /**
   * Checks that only run when named here. `'authentication'`: a token can be obtained from the
   * service (`PaymentGatewayService.checkAuthentication()`; no call while a cached token is valid); an
   * account without credentials is up with `configured: false`.
   * @default [] (the webhook event stores, and the queues in queue mode)
   */
  include?: readonly 'authentication'[];
  /**
   * Checks left out. `['store']` on a queue-mode instance without a worker (`queueWorker: false`):
   * its route queues events while the store is down (the workers claim them once it is back), so a
   * readiness probe must not take it out of rotation for that. A name no account's checks have is refused.
   * @default []
   */
  exclude?: readonly ('store' | 'queue' | 'authentication')[];
  /** Longest wait for each check, in ms (1 to 2,147,483,647); a slower one is down. @default 3000 */
  timeoutMs?: number;
}

/**
 * One check of one account's dependency, run by `PaymentHealthIndicator`. The module
 * registers a `store` probe (always run) and an `authentication` probe (run on request)
 * per account; another part of the module with a dependency of its own (e.g. a queue on
 * Redis) registers one more through `PaymentAccountRegistry.attachProbe`.
 */
export interface PaymentHealthProbe {
  account: string;
  /** Name of the component in the result: `store`, `authentication`, `queue`, ... */
  component: string;
  /** Run only when `include` names the component. @default false */
  onDemand?: boolean;
  /** Details shown up or down (e.g. `kind`, a redacted `url`); never a secret. */
  details?: Readonly<Record<string, unknown>>;
  /**
   * Resolves (optionally with more details) when the dependency works; rejects when it does not.
   * `signal` aborts when the health check stops waiting (its `timeoutMs`).
   */
  check(signal?: AbortSignal): Promise<Record<string, unknown> | void>;
}
