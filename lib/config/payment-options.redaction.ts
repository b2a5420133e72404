import type { ResolvedPaymentOptions } from './payment-module-options.interface.js';
import { redactRedisUrl } from './redact-url.js';

const REDACTED = '[redacted]';

/** Keeps secrets usable by the providers but out of JSON.stringify, util.inspect and so out of logs. */
export function withRedactedSecrets(options: ResolvedPaymentOptions): ResolvedPaymentOptions {
  const redacted = () => ({
    ...options,
    clientSecret: options.clientSecret === undefined ? undefined : REDACTED,
    webhookSecrets: options.webhookSecrets.map(() => REDACTED),
    redisUrl: options.redisUrl === undefined ? undefined : redactRedisUrl(options.redisUrl),
    queueRedisUrl: options.queueRedisUrl === undefined ? undefined : redactRedisUrl(options.queueRedisUrl),
    store: options.store ? options.store.constructor?.name ?? 'custom store' : undefined,
  });
  Object.defineProperty(options, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(options, Symbol.for('nodejs.util.inspect.custom'), { value: redacted, enumerable: false });
  return options;
}
