import type { ResolvedPaymentOptions } from './payment-module-options.interface.js';
import { redactRedisUrl } from './redact-url.js';

const REDACTED = '[redacted]';

/** The fields that hold a secret (a Redis URL may carry a password). */
const SECRET_FIELDS = ['clientSecret', 'webhookSecrets', 'redisUrl', 'queueRedisUrl'] as const;

/**
 * Keeps secrets usable by the providers but out of JSON.stringify, util.inspect and so out of
 * logs; the secret fields are not enumerable either, so a copy (`{ ...options }`,
 * `structuredClone`, `Object.entries`) carries none of them.
 */
export function withRedactedSecrets(options: ResolvedPaymentOptions): ResolvedPaymentOptions {
  const redacted = () => ({
    ...options,
    clientSecret: options.clientSecret === undefined ? undefined : REDACTED,
    webhookSecrets: options.webhookSecrets.map(() => REDACTED),
    redisUrl: options.redisUrl === undefined ? undefined : redactRedisUrl(options.redisUrl),
    queueRedisUrl: options.queueRedisUrl === undefined ? undefined : redactRedisUrl(options.queueRedisUrl),
    store: options.store ? options.store.constructor?.name ?? 'custom store' : undefined,
  });
  for (const field of SECRET_FIELDS) {
    Object.defineProperty(options, field, { value: options[field], enumerable: false, writable: false });
  }
  Object.defineProperty(options, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(options, Symbol.for('nodejs.util.inspect.custom'), { value: redacted, enumerable: false });
  return options;
}
