import { REDACTED } from '../common/redaction.util.js';
import { givenOptionEntries, holdsNoOptions, PAYMENT_OPTION_KEYS } from './payment-option-keys.validation.js';
import type { ResolvedPaymentOptions } from './payment-module-options.interface.js';
import { redactRedisUrl, redisUrlSecrets, URL_SCHEME } from './redact-url.js';

/** The fields that hold a secret (a Redis URL may carry a password). */
const SECRET_FIELDS = ['clientSecret', 'webhookSecrets', 'redisUrl', 'queueRedisUrl'] as const;

/**
 * Keeps secrets usable by the providers but out of JSON.stringify, util.inspect and so out of
 * logs; the secret fields are not enumerable either, so a copy (`{ ...options }`,
 * `structuredClone`, `Object.entries`) carries none of them.
 */
export function withRedactedSecrets(options: ResolvedPaymentOptions): ResolvedPaymentOptions {
  for (const field of SECRET_FIELDS) {
    Object.defineProperty(options, field, { value: options[field], enumerable: false, writable: false });
  }
  printRedacted(options, 'webhookSecrets');
  return options;
}

/**
 * Makes JSON and `inspect` print `options` as its enumerable fields plus its secret ones
 * redacted: secrets (one, or each of a list) as the marker, Redis URLs without their password,
 * a store by its class name. `webhookSecrets` is the resolved options' name, `webhookSecret` the given ones'.
 */
function printRedacted(options: object, webhookSecretField: 'webhookSecret' | 'webhookSecrets'): void {
  const fields = options as Record<string, unknown>;
  const secret = (value: unknown) => (value === undefined ? undefined : Array.isArray(value) ? value.map(() => REDACTED) : REDACTED);
  const url = (value: unknown) => (typeof value === 'string' ? redactRedisUrl(value) : value);
  const store = fields['store'] as object | undefined;
  const redacted = () => ({
    ...fields,
    clientSecret: secret(fields['clientSecret']),
    [webhookSecretField]: secret(fields[webhookSecretField]),
    redisUrl: url(fields['redisUrl']),
    queueRedisUrl: url(fields['queueRedisUrl']),
    store: store ? store.constructor?.name ?? 'custom store' : undefined,
  });
  Object.defineProperty(options, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(options, Symbol.for('nodejs.util.inspect.custom'), { value: redacted, enumerable: false });
}

/** The options that hold a secret (a Redis URL may carry a password). */
const SECRET_OPTION_KEYS: ReadonlySet<string> = new Set(['clientSecret', 'webhookSecret', 'redisUrl', 'queueRedisUrl']);

/**
 * A copy of the options given to `forRoot()` (or returned by a `forRootAsync()` factory) whose
 * JSON and `inspect` output show no secret, and whose secret fields a spread copy does not
 * carry. Nest keeps them as a provider, so whatever reaches its container (a JSON logger
 * serialising a service that holds `ModuleRef` or `DiscoveryService`) would print them. Each
 * option is read as the resolver reads it (a class's getters, a proxy's `get`); an unknown own
 * key is kept for the resolver to refuse. An array, anything but an object, or an object holding no
 * option (`holdsNoOptions`) is returned as it is, for the resolver to refuse.
 */
export function withRedactedModuleOptions<T>(options: T): T {
  if (typeof options !== 'object' || options === null || Array.isArray(options) || holdsNoOptions(options)) return options;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of givenOptionEntries(options, PAYMENT_OPTION_KEYS)) {
    Object.defineProperty(copy, key, { value, enumerable: !SECRET_OPTION_KEYS.has(key), writable: true, configurable: true });
  }
  // an own `toJSON` is no option: kept as given, for the resolver to refuse
  if (!Object.hasOwn(copy, 'toJSON')) printRedacted(copy, 'webhookSecret');
  return copy as T;
}

/** Keys whose value an error never repeats: secrets, and URLs that may carry a password or user name. */
const NOT_REPEATED = new Set(['baseUrl', 'clientId', 'clientSecret', 'webhookSecret', 'redisUrl', 'queueRedisUrl']);

/**
 * ` (given: "15s")`: the bad value of a key that holds no secret, short, so the operator sees what
 * was read; never one holding (or part of) a value of the keys never repeated: a secret read into
 * the wrong key (a shifted line of an env file) stays out of the error, and neither does a URL or
 * anything with an `@` (a Redis URL in the prefix's variable, too long to be read as one).
 */
export function givenValue(key: string, options: Record<string, unknown>): string {
  const value = options[key];
  if (NOT_REPEATED.has(key) || !['string', 'number', 'boolean'].includes(typeof value)) return '';
  // a URL (a Redis URL read into the wrong variable) or `user:password@host` may carry a password
  if (typeof value === 'string' && (URL_SCHEME.test(value.trimStart()) || value.includes('@'))) return ' (given: a URL or credentials, not repeated)';
  // as read, a number too: a numeric secret in a number's variable (`PAYMENT_MAX_RETRIES=73910466512`)
  const read = String(value);
  // the Redis URLs' passwords too: a short one is no part of the URL an 8-character value is looked for in
  const given = [...NOT_REPEATED].flatMap((k) => options[k]).filter((v): v is string => typeof v === 'string');
  const passwords = (['redisUrl', 'queueRedisUrl'] as const).flatMap((k) => (typeof options[k] === 'string' ? redisUrlSecrets(options[k], 1) : []));
  // a secret of digits as a number variable reads it: rounded when it has more than 15
  const asNumbers = given.filter((v) => /^\d{16,}$/.test(v.trim())).map((v) => String(Number(v)));
  const secrets = [...given, ...passwords, ...asNumbers].filter((v) => v.length > 0);
  const holds = (secret: string) => read === secret || (secret.length >= 4 && read.includes(secret)) || (read.length >= 8 && secret.includes(read));
  if (secrets.some(holds)) return ' (given: a value of a secret option)';
  const text = typeof value === 'string' ? JSON.stringify(value) : read;
  return ` (given: ${text.length > 40 ? `${text.slice(0, 37)}...` : text})`;
}
