import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import { WEBHOOK_LEASE_MS_RANGE, WEBHOOK_RETENTION_MS_RANGE, WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE } from '../config/payment-options.schema.js';
import type { WebhookIdempotencyOptions } from './webhook-idempotency.interface.js';

/** Whole numbers within the module's own bounds for the same settings (`webhookLeaseMs`, ...). */
const WHOLE_NUMBER_BOUNDS: ReadonlyArray<[keyof WebhookIdempotencyOptions, number, number, string]> = [
  ['leaseMs', WEBHOOK_LEASE_MS_RANGE.min, WEBHOOK_LEASE_MS_RANGE.max, 'ms'],
  ['retentionMs', WEBHOOK_RETENTION_MS_RANGE.min, WEBHOOK_RETENTION_MS_RANGE.max, 'ms'],
  ['completeAttempts', 1, Number.MAX_SAFE_INTEGER, ''],
  ['maxLeaseRenewalMs', 0, Number.MAX_SAFE_INTEGER, 'ms'],
  ['shutdownTimeoutMs', WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE.min, WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE.max, 'ms'],
];

/**
 * Checks the settings of `PaymentWebhookIdempotencyInterceptor` (given to its constructor or to
 * `@WebhookIdempotencyKey`) where they are written: a bad one reached the store only per
 * delivery, as a failure that looked like an outage (a lease refused: every delivery 503; a
 * retention refused: 2xx with the completion never recorded, so the next copy ran again).
 * @throws PaymentConfigurationError naming each bad option and `where` it was given
 */
export function assertWebhookIdempotencyOptions(options: WebhookIdempotencyOptions | undefined, where: string): void {
  if (options === undefined || options === null) return;
  const problems: string[] = [];
  if (typeof options !== 'object') {
    problems.push(`${where}: the options must be an object, got ${typeof options}`);
  } else {
    for (const [name, min, max, unit] of WHOLE_NUMBER_BOUNDS) {
      const value: unknown = options[name];
      if (value === undefined) continue;
      if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
        const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `${min} to ${max}`;
        problems.push(`${where}: ${name} must be a whole number${unit ? ` of ${unit}` : ''} (${range}), got ${describeValue(value)}`);
      }
    }
    for (const name of ['key', 'duplicateResponse'] as const) {
      const value: unknown = options[name];
      if (value !== undefined && typeof value !== 'function') problems.push(`${where}: ${name} must be a function, got ${describeValue(value)}`);
    }
  }
  if (problems.length > 0) throw new PaymentConfigurationError(problems);
}

function describeValue(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `a string`;
  return value === null ? 'null' : typeof value;
}
