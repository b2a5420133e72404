import { likelyKey } from '../common/likely-key.util.js';
import type { PaymentModuleOptions } from './payment-module-options.interface.js';

/*
 * The keys of what forRoot() and forRootAsync() are given: options, module extras and Nest's
 * async-options keys. A key nothing reads (a typo, an option on the wrong side of useFactory)
 * would silently leave a setting at its default, so each is refused with the likely key.
 */

/** Every key of `PaymentModuleOptions`: the compiler keeps this list complete. */
const OPTION_KEYS: Record<keyof PaymentModuleOptions, true> = {
  baseUrl: true, environment: true, apiBasePath: true, clientId: true, clientSecret: true, webhookSecret: true, webhookPath: true,
  webhookToleranceSeconds: true, webhookMaxBodyBytes: true, httpTimeoutMs: true, maxRetries: true, retryBaseDelayMs: true,
  retryMaxDelayMs: true, maxRetryAfterMs: true, endpoints: true, tokenRequest: true, tokenResponse: true, responseFields: true,
  rateLimits: true, redisUrl: true, redisKeyPrefix: true, redisTimeoutMs: true, store: true, webhookLeaseMs: true,
  webhookRetentionMs: true, webhookShutdownTimeoutMs: true, memoryStoreMaxEntries: true, reconcile: true, processing: true,
  queueRedisUrl: true, queueWorker: true, queueConcurrency: true, queueAttempts: true, queueBackoffMs: true,
  queueDeadLetterRetentionMs: true, queueShutdownTimeoutMs: true, queueJobTimeoutMs: true, queueLockDurationMs: true,
  queueMaxStalledCount: true,
};

/** Every key of `PaymentModuleOptions`. */
export const PAYMENT_OPTION_KEYS: readonly string[] = Object.keys(OPTION_KEYS);

/** Built-in objects that keep their data where options are not read (a `Map`'s entries). */
const CONTAINER_BRANDS = /^\[object (Map|Set|WeakMap|WeakSet|Promise|Date|RegExp|Error)\]$/;

/** A `Map`, `Set`, `Date`...: an object whose data is not in fields, so not a group of options. */
export function isBuiltInContainer(value: object): boolean {
  return CONTAINER_BRANDS.test(Object.prototype.toString.call(value));
}

/**
 * A built-in container given as options (a `Map` of them: a factory's slip) with no option read
 * from it as the resolver reads them (`get`, a proxy's trap included): the environment alone
 * would configure the account. A class instance is options like any object (its fields may all
 * be unset, the environment then filling them).
 */
export function holdsNoOptions(value: object): boolean {
  if (!isBuiltInContainer(value)) return false;
  return PAYMENT_OPTION_KEYS.every((key) => (value as Record<string, unknown>)[key] === undefined);
}

/** The module extras (`PaymentModuleExtras`): `forRoot()` takes them off before the options are read. */
const MODULE_EXTRA_KEYS = new Set(['isGlobal', 'account', 'webhookDecorators', 'webhookClassDecorators', 'webhookImports', 'webhookRoute', 'readEnv']);

/**
 * `forRoot()`'s argument as a plain object, each option and extra read as given (a class's getters,
 * a proxy's `get`): Nest's builder copies own enumerable keys only, and would drop the others
 * (the environment would win over an explicit option; an `account` getter would name no account).
 */
export function plainRootOptions<T extends object>(options: T): T {
  return plainCopy(options, [...PAYMENT_OPTION_KEYS, ...MODULE_EXTRA_KEYS]);
}

/** `forRootAsync()`'s argument as a plain object, read as given like `plainRootOptions`. */
export function plainAsyncOptions<T extends object>(options: T): T {
  return plainCopy(options, [...ASYNC_OPTION_KEYS, ...MODULE_EXTRA_KEYS]);
}

function plainCopy<T extends object>(options: T, keys: Iterable<string>): T {
  const copy: Record<string, unknown> = {};
  for (const [key, value] of givenOptionEntries(options, keys)) copy[key] = value;
  return copy as T;
}

/**
 * The keys `given` has among its own and `keys`, each with its value read as given (a class's
 * getters, a proxy's `get`): what the resolver will read of it, own keys first.
 */
export function givenOptionEntries(given: object, keys: Iterable<string>): Array<[string, unknown]> {
  const fields = given as Record<string, unknown>;
  const entries: Array<[string, unknown]> = [];
  for (const key of new Set([...Object.keys(fields), ...keys])) {
    const value = fields[key];
    if (value !== undefined || Object.hasOwn(fields, key)) entries.push([key, value]);
  }
  return entries;
}

/**
 * A key the options do not have is a typo (`clientSecert`), a resolved field's name
 * (`webhookSecrets`) or an extra returned by a `forRootAsync` factory: silently dropped, it
 * would leave a setting at its default.
 */
export function checkUnknownKeys(explicit: PaymentModuleOptions, problems: string[]): void {
  for (const key of Object.keys(explicit)) {
    if (Object.hasOwn(OPTION_KEYS, key)) continue;
    if (MODULE_EXTRA_KEYS.has(key)) {
      problems.push(`option '${key}' shapes the module: give it to forRootAsync() beside useFactory, not in the options the factory returns`);
      continue;
    }
    // forRoot() has taken its extras off already: a near miss of one (isGlobl) is suggested too
    problems.push(`option '${key}' is unknown${likelyKey(key, [...Object.keys(OPTION_KEYS), ...MODULE_EXTRA_KEYS])}`);
  }
}

/**
 * The module extras given to `forRoot()` / `forRootAsync()` that are not what they must be: Nest's
 * builder would fail on a decorator list that is no array with a bare TypeError, and a string
 * `'false'` for `webhookRoute` would keep the route.
 */
export function moduleExtrasProblems(options: object): string[] {
  const given = options as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of ['webhookDecorators', 'webhookClassDecorators']) {
    const value = given[key];
    if (value !== undefined && !(Array.isArray(value) && value.every((decorator) => typeof decorator === 'function'))) {
      problems.push(`option '${key}' must be an array of decorators, e.g. [Public(), SkipThrottle()]`);
    }
  }
  if (given.webhookImports !== undefined && !Array.isArray(given.webhookImports)) problems.push(`option 'webhookImports' must be an array of modules`);
  for (const key of ['isGlobal', 'webhookRoute', 'readEnv']) {
    if (given[key] !== undefined && typeof given[key] !== 'boolean') problems.push(`option '${key}' must be true or false`);
  }
  return problems;
}

/** What `forRootAsync()` takes besides the module extras (Nest's async-options keys). */
const ASYNC_OPTION_KEYS = new Set(['useFactory', 'useClass', 'useExisting', 'inject', 'imports', 'provideInjectionTokensFrom']);

/**
 * The keys of a `forRootAsync()` argument that it would drop: an option that belongs in what the
 * factory returns (`reconcile: true` beside `useFactory`), or a typo of an extra (`isGlobl`).
 */
export function asyncOptionKeyProblems(options: object): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(options)) {
    if (ASYNC_OPTION_KEYS.has(key) || MODULE_EXTRA_KEYS.has(key)) continue;
    if (Object.hasOwn(OPTION_KEYS, key)) {
      problems.push(`option '${key}' beside useFactory is not read: return it from the factory (or useClass's createPaymentOptions())`);
      continue;
    }
    problems.push(`forRootAsync() option '${key}' is unknown${likelyKey(key, [...ASYNC_OPTION_KEYS, ...MODULE_EXTRA_KEYS])}`);
  }
  return problems;
}
