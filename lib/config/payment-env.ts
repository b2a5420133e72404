import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';

/**
 * Environment variables read by `PaymentModule.forRoot()` for the default account, with the
 * option each one fills. A named account reads the same names with its own prefix
 * (`PAYMENT_EU_BASE_URL` for account `eu`). The README's configuration table lists them.
 * @publicApi
 */
export const PAYMENT_ENV_VARIABLES = {
  baseUrl: 'PAYMENT_BASE_URL',
  environment: 'PAYMENT_ENVIRONMENT',
  apiBasePath: 'PAYMENT_API_BASE_PATH',
  clientId: 'PAYMENT_CLIENT_ID',
  clientSecret: 'PAYMENT_CLIENT_SECRET',
  webhookSecret: 'PAYMENT_WEBHOOK_SECRET',
  webhookPath: 'PAYMENT_WEBHOOK_PATH',
  webhookToleranceSeconds: 'PAYMENT_WEBHOOK_TOLERANCE_SECONDS',
  webhookMaxBodyBytes: 'PAYMENT_WEBHOOK_MAX_BODY_BYTES',
  httpTimeoutMs: 'PAYMENT_HTTP_TIMEOUT_MS',
  maxRetries: 'PAYMENT_MAX_RETRIES',
  redisUrl: 'PAYMENT_REDIS_URL',
  redisKeyPrefix: 'PAYMENT_REDIS_KEY_PREFIX',
  redisTimeoutMs: 'PAYMENT_REDIS_TIMEOUT_MS',
  webhookLeaseMs: 'PAYMENT_WEBHOOK_LEASE_MS',
  webhookRetentionMs: 'PAYMENT_WEBHOOK_RETENTION_MS',
  webhookShutdownTimeoutMs: 'PAYMENT_WEBHOOK_SHUTDOWN_TIMEOUT_MS',
  reconcile: 'PAYMENT_RECONCILE',
  processing: 'PAYMENT_PROCESSING',
  queueRedisUrl: 'PAYMENT_QUEUE_REDIS_URL',
  queueWorker: 'PAYMENT_QUEUE_WORKER',
  queueConcurrency: 'PAYMENT_QUEUE_CONCURRENCY',
  queueAttempts: 'PAYMENT_QUEUE_ATTEMPTS',
  queueBackoffMs: 'PAYMENT_QUEUE_BACKOFF_MS',
  queueDeadLetterRetentionMs: 'PAYMENT_QUEUE_DEAD_LETTER_RETENTION_MS',
  queueShutdownTimeoutMs: 'PAYMENT_QUEUE_SHUTDOWN_TIMEOUT_MS',
  queueJobTimeoutMs: 'PAYMENT_QUEUE_JOB_TIMEOUT_MS',
  queueLockDurationMs: 'PAYMENT_QUEUE_LOCK_DURATION_MS',
  queueMaxStalledCount: 'PAYMENT_QUEUE_MAX_STALLED_COUNT',
} as const;

export type PaymentEnvOptionKey = keyof typeof PAYMENT_ENV_VARIABLES;

/**
 * The values found in the environment, keyed by option name: text as read; a value of the host's ConfigService that is not text, a number or a boolean (an
 * object, a list from a YAML loader) stays as it is, for validation to refuse or check as the option.
 */
export type PaymentEnvValues = Partial<Record<PaymentEnvOptionKey, string | object>>;

/**
 * How each variable is read: as text, a whole number or a boolean; and whether it describes
 * the app's infrastructure rather than a merchant account (`shared`): a named account
 * without its own variable then uses the default account's (one `PAYMENT_REDIS_URL` for all).
 * A `Record` over every option, so a new option cannot be left out.
 */
const ENV_KINDS: Readonly<Record<PaymentEnvOptionKey, { type: 'text' | 'integer' | 'boolean'; shared?: true }>> = {
  baseUrl: { type: 'text' },
  environment: { type: 'text' },
  apiBasePath: { type: 'text' },
  clientId: { type: 'text' },
  clientSecret: { type: 'text' },
  webhookSecret: { type: 'text' },
  webhookPath: { type: 'text' },
  webhookToleranceSeconds: { type: 'integer' },
  webhookMaxBodyBytes: { type: 'integer' },
  httpTimeoutMs: { type: 'integer' },
  maxRetries: { type: 'integer' },
  redisUrl: { type: 'text', shared: true },
  redisKeyPrefix: { type: 'text', shared: true },
  redisTimeoutMs: { type: 'integer', shared: true },
  webhookLeaseMs: { type: 'integer' },
  webhookRetentionMs: { type: 'integer' },
  webhookShutdownTimeoutMs: { type: 'integer', shared: true },
  reconcile: { type: 'boolean' },
  processing: { type: 'text', shared: true },
  queueRedisUrl: { type: 'text', shared: true },
  queueWorker: { type: 'boolean', shared: true },
  queueConcurrency: { type: 'integer', shared: true },
  queueAttempts: { type: 'integer', shared: true },
  queueBackoffMs: { type: 'integer', shared: true },
  queueDeadLetterRetentionMs: { type: 'integer', shared: true },
  queueShutdownTimeoutMs: { type: 'integer', shared: true },
  queueJobTimeoutMs: { type: 'integer', shared: true },
  queueLockDurationMs: { type: 'integer', shared: true },
  queueMaxStalledCount: { type: 'integer', shared: true },
};

/** `PAYMENT_` for the default account, `PAYMENT_EU_` for `eu` (upper-cased, other characters → `_`). */
export function paymentEnvPrefix(account: string = DEFAULT_PAYMENT_ACCOUNT): string {
  if (account === DEFAULT_PAYMENT_ACCOUNT) return 'PAYMENT_';
  return `PAYMENT_${account.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_`;
}

/** The variable an account reads for `option`: `PAYMENT_EU_CLIENT_ID`. */
export function paymentEnvName(option: PaymentEnvOptionKey, account: string = DEFAULT_PAYMENT_ACCOUNT): string {
  return paymentEnvPrefix(account) + PAYMENT_ENV_VARIABLES[option].slice('PAYMENT_'.length);
}

/** Every variable an account reads (the default account's are the values of `PAYMENT_ENV_VARIABLES`). */
export function paymentEnvNames(account: string = DEFAULT_PAYMENT_ACCOUNT): string[] {
  return (Object.keys(PAYMENT_ENV_VARIABLES) as PaymentEnvOptionKey[]).map((option) => paymentEnvName(option, account));
}

/** The default account's variables that named accounts read too, where theirs is unset (the shared settings). */
export function sharedPaymentEnvNames(): string[] {
  return (Object.keys(PAYMENT_ENV_VARIABLES) as PaymentEnvOptionKey[]).filter((option) => ENV_KINDS[option].shared).map((option) => paymentEnvName(option));
}

/**
 * The variables `option` of `account` is read from, for error messages: a named account's
 * shared settings fall back to the default account's variable, which may be the one set.
 */
export function paymentEnvSources(option: PaymentEnvOptionKey, account: string = DEFAULT_PAYMENT_ACCOUNT): string {
  const own = paymentEnvName(option, account);
  return account !== DEFAULT_PAYMENT_ACCOUNT && ENV_KINDS[option].shared ? `${own} (or ${PAYMENT_ENV_VARIABLES[option]})` : own;
}

/**
 * Reads every variable of `account` through `get` (the host's ConfigService when it has one,
 * else `process.env`); empty strings count as unset.
 */
export function readPaymentEnv(
  get: (name: string) => unknown,
  account: string = DEFAULT_PAYMENT_ACCOUNT,
): PaymentEnvValues {
  const values: PaymentEnvValues = {};
  for (const option of Object.keys(PAYMENT_ENV_VARIABLES) as PaymentEnvOptionKey[]) {
    let text = envText(get(paymentEnvName(option, account)));
    if (text === undefined && account !== DEFAULT_PAYMENT_ACCOUNT && ENV_KINDS[option].shared) {
      text = envText(get(PAYMENT_ENV_VARIABLES[option]));
    }
    if (text !== undefined) values[option] = text;
  }
  return values;
}

function envText(raw: unknown): string | object | undefined {
  if (raw === undefined || raw === null) return undefined;
  // String() made an object '[object Object]' (a secret!) or threw on one without a prototype
  if (typeof raw === 'object' || typeof raw === 'function' || typeof raw === 'symbol') return raw as object;
  const text = String(raw).trim();
  return text === '' ? undefined : text;
}

function fromEnvNumber(text: string): number | string {
  return /^-?\d+$/.test(text) ? Number(text) : text;
}

function fromEnvBoolean(text: string): boolean | string {
  const lower = text.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(lower)) return true;
  if (['false', '0', 'no', 'off'].includes(lower)) return false;
  return text;
}

/** Converts the env strings to the option types; unparsable text is kept so validation reports it. */
export function parsePaymentEnv(env: PaymentEnvValues): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(env) as [PaymentEnvOptionKey, string | object][]) {
    const { type } = ENV_KINDS[key];
    out[key] = typeof text !== 'string' ? text : type === 'integer' ? fromEnvNumber(text) : type === 'boolean' ? fromEnvBoolean(text) : text;
  }
  return out;
}
