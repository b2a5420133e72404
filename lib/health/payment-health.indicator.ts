import { Injectable } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { errorMessage } from '../common/error-message.util.js';
import { MAX_TIMER_MS, withTimeout } from '../common/promise-timeout.util.js';
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
 * memory store is always up), in queue mode the queue's Redis, and, when asked, that a token can
 * be obtained from the service.
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
   * @throws RangeError when `include` or `exclude` names a check no account has, or `timeoutMs` is not 1 to 2^31 - 1 ms.
   */
  async isHealthy<K extends string = 'payments'>(key: K = 'payments' as K, options: PaymentHealthCheckOptions = {}): Promise<PaymentHealthIndicatorResult<K>> {
    if (typeof options !== 'object' || options === null) throw new TypeError('PaymentHealthIndicator.isHealthy: options must be an object or left out');
    if (options.accounts !== undefined && !Array.isArray(options.accounts)) throw new TypeError('PaymentHealthIndicator.isHealthy: accounts must be an array of account names');
    const names = options.accounts ?? this.accounts.names();
    for (const name of names) this.accounts.require(name);
    const include = this.componentNames('include', options.include);
    const exclude = this.componentNames('exclude', options.exclude);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // past 2^31 - 1 ms (Infinity, NaN too) Node's timers fire after 1 ms: every check would be down
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
      throw new RangeError(`PaymentHealthIndicator.isHealthy: timeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS}`);
    }
    // in registration order, whatever the order of `accounts`
    const selected = this.accounts
      .names()
      .filter((name) => names.includes(name))
      .flatMap((name) => this.accounts.require(name).probes)
      .filter((p) => (!p.onDemand || include.has(p.component)) && !exclude.has(p.component));

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

  /**
   * The component names of `include` or `exclude`; a name no registered account has a check of
   * is refused (a typo would leave a check out, or never run it, without a word).
   */
  private componentNames(option: 'include' | 'exclude', given: readonly string[] | undefined): ReadonlySet<string> {
    if (given === undefined) return new Set();
    if (!Array.isArray(given)) throw new TypeError(`PaymentHealthIndicator.isHealthy: ${option} must be an array of check names`);
    const known = new Set(this.accounts.names().flatMap((name) => this.accounts.require(name).probes.map((p) => p.component)));
    const unknown = given.filter((component) => !known.has(component));
    if (unknown.length > 0) {
      throw new RangeError(
        `PaymentHealthIndicator.isHealthy: ${option} names ${unknown.map((c) => JSON.stringify(c)).join(', ')}, a check no account has (checks: ${[...known].join(', ')})`,
      );
    }
    return new Set(given);
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
