import { Injectable } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { errorMessage } from '../common/error-message.util.js';
import { withTimeout } from '../common/promise-timeout.util.js';
import type {
  PaymentHealthCheckOptions,
  PaymentHealthComponentState,
  PaymentHealthIndicatorResult,
  PaymentHealthProbe,
} from './payment-health.interface.js';

const DEFAULT_TIMEOUT_MS = 3000;

/**
 * Health of the payment module's dependencies, for `@nestjs/terminus` or any readiness
 * route: each account's webhook event store (a small Redis write where Redis is used; the
 * memory store is always up) and, when asked, that a token can be obtained from the service.
 * It returns plain objects of terminus' `HealthIndicatorResult` shape and imports nothing
 * from terminus, so the package does not depend on it.
 *
 * Down is returned, never thrown: `HealthCheckService.check` then answers 503 with the
 * details. Every check is bounded by `timeoutMs`. Details and reasons name the component
 * (store kind, Redis URL with its password redacted) and never carry a secret.
 *
 * @example
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.payments.isHealthy('payments', { include: ['authentication'] })]);
 * }
 * ```
 * @publicApi
 */
@Injectable()
export class PaymentHealthIndicator {
  constructor(private readonly accounts: PaymentAccountRegistry) {}

  /**
   * Runs the checks concurrently and resolves with `{ [key]: { status, reason?, accounts } }`:
   * `up` when every check passed, else `down` with `reason` listing the failed components.
   * @throws PaymentConfigurationError when `accounts` names an account no `forRoot()` registered.
   */
  async isHealthy<K extends string = 'payments'>(key: K = 'payments' as K, options: PaymentHealthCheckOptions = {}): Promise<PaymentHealthIndicatorResult<K>> {
    const names = options.accounts ?? this.accounts.names();
    for (const name of names) this.accounts.require(name);
    const include = new Set(options.include ?? []);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // in registration order, whatever the order of `accounts`
    const selected = this.accounts
      .names()
      .filter((name) => names.includes(name))
      .flatMap((name) => this.accounts.require(name).probes)
      .filter((p) => !p.onDemand || include.has(p.component));

    const states = await Promise.all(selected.map((probe) => runProbe(probe, timeoutMs)));
    const accounts: Record<string, Record<string, PaymentHealthComponentState>> = {};
    for (const name of names) accounts[name] = {};
    const failures: string[] = [];
    selected.forEach((probe, i) => {
      const state = states[i]!;
      accounts[probe.account]![probe.component] = state;
      if (state.status === 'down') failures.push(`${probe.account}/${probe.component}: ${String(state.reason)}`);
    });
    const result = failures.length === 0 ? { status: 'up' as const, accounts } : { status: 'down' as const, reason: failures.join('; '), accounts };
    return { [key]: result } as PaymentHealthIndicatorResult<K>;
  }
}

async function runProbe(probe: PaymentHealthProbe, timeoutMs: number): Promise<PaymentHealthComponentState> {
  const startedAt = performance.now();
  // a probe given up must let go of what it waits for (a rate-limit slot), not hold it for later callers
  const givenUp = new AbortController();
  try {
    const details = await withTimeout(probe.check(givenUp.signal), timeoutMs, () => {
      givenUp.abort();
      return new Error(`${probe.component} check did not finish within ${timeoutMs} ms`);
    });
    return { status: 'up', ...probe.details, ...(details ?? {}), latencyMs: Math.round(performance.now() - startedAt) };
  } catch (error) {
    // no secret in it: the module's Redis store words its errors without the URL's password
    const reason = errorMessage(error);
    const code = (error as { code?: unknown } | null)?.code;
    return { status: 'down', ...probe.details, ...(typeof code === 'string' ? { code } : {}), reason };
  }
}
