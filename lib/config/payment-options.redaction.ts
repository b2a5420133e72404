import type { PaymentModuleOptions, ResolvedPaymentOptions } from './payment-module-options.interface.js';
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

/**
 * A copy of the options given to `forRoot()` (or returned by a `forRootAsync()` factory) whose
 * JSON and `inspect` output show no secret. Nest keeps them as a provider, so whatever reaches
 * its container (a JSON logger serialising a service that holds `ModuleRef` or `DiscoveryService`)
 * would print them. Anything but an object is returned as it is, for the resolver to refuse.
 */
export function withRedactedModuleOptions<T>(options: T): T {
  if (typeof options !== 'object' || options === null) return options;
  const copy = { ...options } as T & PaymentModuleOptions;
  const url = (value: unknown) => (typeof value === 'string' ? redactRedisUrl(value) : value);
  const secret = (value: unknown) => (value === undefined ? undefined : Array.isArray(value) ? value.map(() => REDACTED) : REDACTED);
  const redacted = () => ({
    ...copy,
    clientSecret: secret(copy.clientSecret),
    webhookSecret: secret(copy.webhookSecret),
    redisUrl: url(copy.redisUrl),
    queueRedisUrl: url(copy.queueRedisUrl),
    store: copy.store ? copy.store.constructor?.name ?? 'custom store' : undefined,
  });
  Object.defineProperty(copy, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(copy, Symbol.for('nodejs.util.inspect.custom'), { value: redacted, enumerable: false });
  return copy;
}
