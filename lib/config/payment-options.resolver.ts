import { stripUndefined } from '../common/strip-undefined.util.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { PaymentConfigurationError } from './payment-configuration.errors.js';
import { parsePaymentEnv, type PaymentEnvValues } from './payment-env.js';
import {
  DEFAULT_PAYMENT_ENDPOINTS,
  DEFAULT_RATE_LIMITS,
  DEFAULT_RESPONSE_FIELDS,
  DEFAULT_TOKEN_REQUEST,
  DEFAULT_TOKEN_RESPONSE,
  LIVE_BASE_PATH,
  PAYMENT_OPTION_DEFAULTS,
  SANDBOX_BASE_PATH,
} from './payment-options.defaults.js';
import type {
  PaymentModuleOptions,
  PaymentRateLimits,
  PaymentResponseFields,
  PaymentTokenRequestOptions,
  PaymentTokenResponseOptions,
  ResolvedPaymentOptions,
} from './payment-module-options.interface.js';
import { holdsNoOptions } from './payment-option-keys.validation.js';
import { withRedactedSecrets } from './payment-options.redaction.js';
import { PaymentOptionsSchema, type PaymentOptionsSchemaKey } from './payment-options.schema.js';
import { validatePaymentOptions } from './payment-options.validation.js';

/**
 * Merges explicit options over environment values over defaults, validates the result and
 * returns what every provider reads. Throws one PaymentConfigurationError naming every bad key.
 */
export function resolvePaymentOptions(
  explicit: PaymentModuleOptions,
  env: PaymentEnvValues = {},
  account: string = DEFAULT_PAYMENT_ACCOUNT,
  { readEnv = true }: { readEnv?: boolean } = {},
): ResolvedPaymentOptions {
  if (typeof explicit !== 'object' || explicit === null || Array.isArray(explicit) || holdsNoOptions(explicit)) {
    // a forRootAsync factory that returned something else (its keys would read as '0', '1', ...),
    // or nothing at all (a missing `return`), or a built-in container holding none (a Map of
    // them): the env alone would configure the account
    const isObject = explicit != null && typeof explicit === 'object';
    const what =
      explicit === null || explicit === undefined
        ? String(explicit)
        : Array.isArray(explicit)
          ? 'an array'
          : isObject
            ? `a ${(Object.getPrototypeOf(explicit) as { constructor?: { name?: string } }).constructor?.name || 'class instance'} holding no option`
            : typeof explicit;
    throw new PaymentConfigurationError(
      [`the options must be an object, not ${what}${explicit == null || isObject ? ' (does the forRootAsync() factory return them?)' : ''}`],
      account,
    );
  }
  const envOptions = parsePaymentEnv(env);
  const pick = <K extends string>(key: K): unknown => {
    const own = (explicit as Record<string, unknown>)[key];
    // null counts as not given, like undefined: the env (or the default) still applies
    return own ?? envOptions[key];
  };
  // One key per line below, so an option cannot fall back to another option's default.
  const orDefault = <K extends keyof typeof PAYMENT_OPTION_DEFAULTS>(key: K): unknown => pick(key) ?? PAYMENT_OPTION_DEFAULTS[key];

  const schema = Object.assign(new PaymentOptionsSchema(), {
    baseUrl: pick('baseUrl'),
    environment: orDefault('environment'),
    apiBasePath: pick('apiBasePath'),
    clientId: trimmed(pick('clientId')),
    clientSecret: trimmed(pick('clientSecret')),
    webhookSecret: splitSecrets(pick('webhookSecret')) ?? [],
    webhookPath: pick('webhookPath') ?? defaultWebhookPath(account),
    webhookToleranceSeconds: orDefault('webhookToleranceSeconds'),
    webhookMaxBodyBytes: orDefault('webhookMaxBodyBytes'),
    httpTimeoutMs: orDefault('httpTimeoutMs'),
    maxRetries: orDefault('maxRetries'),
    retryBaseDelayMs: orDefault('retryBaseDelayMs'),
    retryMaxDelayMs: orDefault('retryMaxDelayMs'),
    maxRetryAfterMs: orDefault('maxRetryAfterMs'),
    redisUrl: pick('redisUrl'),
    redisKeyPrefix: pick('redisKeyPrefix'),
    redisTimeoutMs: orDefault('redisTimeoutMs'),
    webhookLeaseMs: orDefault('webhookLeaseMs'),
    webhookRetentionMs: orDefault('webhookRetentionMs'),
    webhookShutdownTimeoutMs: orDefault('webhookShutdownTimeoutMs'),
    memoryStoreMaxEntries: orDefault('memoryStoreMaxEntries'),
    reconcile: orDefault('reconcile'),
    processing: orDefault('processing'),
    queueRedisUrl: pick('queueRedisUrl'),
    queueWorker: orDefault('queueWorker'),
    queueConcurrency: orDefault('queueConcurrency'),
    queueAttempts: orDefault('queueAttempts'),
    queueBackoffMs: orDefault('queueBackoffMs'),
    queueDeadLetterRetentionMs: orDefault('queueDeadLetterRetentionMs'),
    queueShutdownTimeoutMs: orDefault('queueShutdownTimeoutMs'),
    queueJobTimeoutMs: orDefault('queueJobTimeoutMs'),
    queueLockDurationMs: orDefault('queueLockDurationMs'),
    queueMaxStalledCount: orDefault('queueMaxStalledCount'),
  } satisfies Record<PaymentOptionsSchemaKey, unknown>);

  const problems = validatePaymentOptions(schema, explicit, account, { readEnv, givenWebhookSecret: pick('webhookSecret') });
  if (problems.length > 0) throw new PaymentConfigurationError(problems, account);

  const environment = schema.environment as ResolvedPaymentOptions['environment'];
  const baseUrl = schema.baseUrl.replace(/\/+$/, '');
  const tokenRequest: PaymentTokenRequestOptions = { ...DEFAULT_TOKEN_REQUEST, ...stripUndefined(explicit.tokenRequest) };
  const tokenResponse: PaymentTokenResponseOptions = { ...DEFAULT_TOKEN_RESPONSE, ...stripUndefined(explicit.tokenResponse) };
  const fields = { ...DEFAULT_RESPONSE_FIELDS, ...stripUndefined(explicit.responseFields) };
  const responseFields: PaymentResponseFields = {
    trxId: [...fields.trxId],
    refundUid: [...fields.refundUid],
    payoutUid: [...fields.payoutUid],
    status: [...fields.status],
  };
  const rateLimits: PaymentRateLimits | false =
    explicit.rateLimits === false ? false : { ...DEFAULT_RATE_LIMITS, ...stripUndefined(explicit.rateLimits) };

  return withRedactedSecrets({
    account,
    baseUrl,
    environment,
    apiBaseUrl: baseUrl + (schema.apiBasePath?.replace(/\/+$/, '') ?? (environment === 'live' ? LIVE_BASE_PATH : SANDBOX_BASE_PATH)),
    clientId: schema.clientId,
    clientSecret: schema.clientSecret,
    webhookSecrets: schema.webhookSecret,
    webhookPath: schema.webhookPath.replace(/^\/+|\/+$/g, ''),
    webhookToleranceSeconds: schema.webhookToleranceSeconds,
    webhookMaxBodyBytes: schema.webhookMaxBodyBytes,
    httpTimeoutMs: schema.httpTimeoutMs,
    maxRetries: schema.maxRetries,
    retryBaseDelayMs: schema.retryBaseDelayMs,
    retryMaxDelayMs: schema.retryMaxDelayMs,
    maxRetryAfterMs: schema.maxRetryAfterMs,
    endpoints: { ...DEFAULT_PAYMENT_ENDPOINTS, ...stripUndefined(explicit.endpoints) },
    tokenRequest,
    tokenResponse,
    responseFields,
    rateLimits,
    redisUrl: schema.redisUrl,
    redisKeyPrefix: schema.redisKeyPrefix ?? `payment-gateway:${environment}:`,
    redisTimeoutMs: schema.redisTimeoutMs,
    store: explicit.store ?? undefined,
    webhookLeaseMs: schema.webhookLeaseMs,
    webhookRetentionMs: schema.webhookRetentionMs,
    webhookShutdownTimeoutMs: schema.webhookShutdownTimeoutMs,
    memoryStoreMaxEntries: schema.memoryStoreMaxEntries,
    reconcile: schema.reconcile,
    processing: schema.processing as ResolvedPaymentOptions['processing'],
    queueRedisUrl: schema.queueRedisUrl ?? schema.redisUrl,
    queueWorker: schema.queueWorker,
    queueConcurrency: schema.queueConcurrency,
    queueAttempts: schema.queueAttempts,
    queueBackoffMs: schema.queueBackoffMs,
    queueDeadLetterRetentionMs: schema.queueDeadLetterRetentionMs,
    queueShutdownTimeoutMs: schema.queueShutdownTimeoutMs,
    queueJobTimeoutMs: schema.queueJobTimeoutMs,
    queueLockDurationMs: schema.queueLockDurationMs,
    queueMaxStalledCount: schema.queueMaxStalledCount,
  });
}

/** `payments/webhook` for the default account, `payments/<account>/webhook` for a named one. */
function defaultWebhookPath(account: string): string {
  return account === DEFAULT_PAYMENT_ACCOUNT ? PAYMENT_OPTION_DEFAULTS.webhookPath : `payments/${account}/webhook`;
}

/**
 * A credential read from a secrets file keeps its newline, and the token call then fails with
 * wrong credentials: trimmed as the env values and webhook secrets are (a blank one is refused).
 */
function trimmed(value: unknown): unknown {
  return typeof value === 'string' ? value.trim() : value;
}

function splitSecrets(value: unknown): unknown {
  if (typeof value === 'string') return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  // a secret read from a file keeps its newline: trimmed as the env forms are (an entry left empty is refused)
  if (Array.isArray(value)) return value.map((s: unknown) => (typeof s === 'string' ? s.trim() : s));
  return value;
}
