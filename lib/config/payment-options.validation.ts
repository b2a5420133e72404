import {
  ArrayNotEmpty,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { DEFAULT_PAYMENT_ACCOUNT, LIVE_BASE_PATH, SANDBOX_BASE_PATH } from '../payment.constants.js';
import { PaymentConfigurationError } from './payment-configuration.error.js';
import { PAYMENT_ENV_VARIABLES, paymentEnvName, type PaymentEnvOptionKey, type PaymentEnvValues } from './payment-env.js';
import {
  DEFAULT_PAYMENT_ENDPOINTS,
  DEFAULT_RATE_LIMITS,
  DEFAULT_RESPONSE_FIELDS,
  DEFAULT_TOKEN_RESPONSE,
  PAYMENT_OPTION_DEFAULTS,
} from './payment-options.defaults.js';
import type {
  PaymentEndpoints,
  PaymentModuleOptions,
  PaymentRateLimits,
  PaymentResponseFields,
  PaymentTokenResponseOptions,
  ResolvedPaymentOptions,
} from './payment-module-options.interface.js';
import { redactRedisUrl } from './redact-url.js';

export { PaymentConfigurationError };

/** Flat, validated shape of the scalar options. Messages say what is expected, never the value. */
class PaymentOptionsSchema {
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['http', 'https'] },
    { message: 'must be an absolute http(s) URL of the service, without /api/v1' },
  )
  baseUrl!: string;

  @IsIn(['sandbox', 'live'], { message: "must be 'sandbox' or 'live'" })
  environment!: string;

  @IsOptional()
  @IsString({ message: 'must be a non-empty string' })
  @MinLength(1, { message: 'must be a non-empty string' })
  clientId?: string;

  @IsOptional()
  @IsString({ message: 'must be a non-empty string' })
  @MinLength(1, { message: 'must be a non-empty string' })
  clientSecret?: string;

  @IsArray({ message: 'must be a string or a list of strings' })
  @IsString({ each: true, message: 'must contain only non-empty strings' })
  @MinLength(1, { each: true, message: 'must contain only non-empty strings' })
  webhookSecret!: string[];

  @Matches(/^\/?[A-Za-z0-9._~\-:]+(\/[A-Za-z0-9._~\-:]+)*\/?$/, {
    message: "must be a route path such as 'payments/webhook' (letters, digits, '-', '_', '.', '/')",
  })
  webhookPath!: string;

  @IsInt({ message: 'must be a whole number of seconds' })
  @Min(1, { message: 'must be at least 1 second' })
  @Max(86_400, { message: 'must be at most 86400 seconds' })
  webhookToleranceSeconds!: number;

  @IsInt({ message: 'must be a whole number of bytes' })
  @Min(1024, { message: 'must be at least 1024 bytes' })
  webhookMaxBodyBytes!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(1, { message: 'must be at least 1 ms' })
  @Max(600_000, { message: 'must be at most 600000 ms' })
  httpTimeoutMs!: number;

  @IsInt({ message: 'must be a whole number' })
  @Min(0, { message: 'must be 0 or more' })
  @Max(10, { message: 'must be at most 10' })
  maxRetries!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(0, { message: 'must be 0 or more' })
  retryBaseDelayMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(0, { message: 'must be 0 or more' })
  retryMaxDelayMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(1000, { message: 'must be at least 1000 ms (Retry-After counts whole seconds)' })
  @Max(3_600_000, { message: 'must be at most 3600000 ms (one hour)' })
  maxRetryAfterMs!: number;

  @IsOptional()
  @Matches(/^rediss?:\/\/\S+$/, { message: 'must be a redis:// or rediss:// URL' })
  redisUrl?: string;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(100, { message: 'must be at least 100 ms' })
  webhookLeaseMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(1000, { message: 'must be at least 1000 ms' })
  webhookRetentionMs!: number;

  @IsInt({ message: 'must be a whole number' })
  @Min(1, { message: 'must be at least 1' })
  memoryStoreMaxEntries!: number;

  @IsBoolean({ message: "must be true or false ('true'/'false', '1'/'0' in the environment)" })
  reconcile!: boolean;
}

type SchemaKey = keyof PaymentOptionsSchema;

function fromEnvNumber(text: string): number | string {
  return /^-?\d+$/.test(text) ? Number(text) : text;
}

function fromEnvBoolean(text: string): boolean | string {
  const lower = text.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(lower)) return true;
  if (['false', '0', 'no', 'off'].includes(lower)) return false;
  return text;
}

function splitSecrets(value: unknown): unknown {
  if (typeof value === 'string') return value.split(',').map((s) => s.trim()).filter((s) => s !== '');
  return value;
}

const NUMERIC_ENV_KEYS: PaymentEnvOptionKey[] = [
  'webhookToleranceSeconds',
  'webhookMaxBodyBytes',
  'httpTimeoutMs',
  'maxRetries',
  'webhookLeaseMs',
  'webhookRetentionMs',
];

/** Converts the env strings to the option types; unparsable text is kept so validation reports it. */
function envToOptions(env: PaymentEnvValues): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, text] of Object.entries(env) as [PaymentEnvOptionKey, string][]) {
    if (NUMERIC_ENV_KEYS.includes(key)) out[key] = fromEnvNumber(text);
    else if (key === 'reconcile') out[key] = fromEnvBoolean(text);
    else out[key] = text;
  }
  return out;
}

function describeKey(key: string, explicit: PaymentModuleOptions, account: string): string {
  if (!(key in PAYMENT_ENV_VARIABLES)) return `option '${key}'`;
  const envName = paymentEnvName(key as PaymentEnvOptionKey, account);
  // Name the place the value came from (or, when absent, the variable most users set).
  const givenExplicitly = (explicit as Record<string, unknown>)[key] !== undefined;
  return givenExplicitly ? `option '${key}' (env ${envName})` : `${envName} (option '${key}')`;
}

function flattenErrors(errors: ValidationError[]): Array<{ key: string; messages: string[] }> {
  return errors.map((e) => ({ key: e.property, messages: [...new Set(Object.values(e.constraints ?? {}))] }));
}

function checkPositiveInts(
  group: string,
  value: Record<string, unknown> | undefined,
  problems: string[],
): void {
  for (const [key, v] of Object.entries(value ?? {})) {
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 0)) {
      problems.push(`option '${group}.${key}' must be a whole number, 0 or more`);
    }
  }
}

/** Each limit is a whole number of requests per minute, at least 1: a limit of 0 would queue calls forever. */
function checkRateLimits(limits: unknown, problems: string[]): void {
  if (limits === undefined || limits === false) return;
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
    problems.push(`option 'rateLimits' must be an object of per-minute limits, or false`);
    return;
  }
  for (const [key, v] of Object.entries(limits)) {
    if (!(key in DEFAULT_RATE_LIMITS)) {
      problems.push(`option 'rateLimits.${key}' is unknown; known: ${Object.keys(DEFAULT_RATE_LIMITS).join(', ')}`);
    } else if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 1)) {
      problems.push(`option 'rateLimits.${key}' must be a whole number of requests per minute, at least 1`);
    }
  }
}

/** Each list names at least one field; a list replaces the default. */
function checkResponseFields(fields: unknown, problems: string[]): void {
  if (fields === undefined) return;
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
    problems.push(`option 'responseFields' must be an object of field-name lists`);
    return;
  }
  for (const [key, names] of Object.entries(fields)) {
    if (!(key in DEFAULT_RESPONSE_FIELDS)) {
      problems.push(`option 'responseFields.${key}' is unknown; known: ${Object.keys(DEFAULT_RESPONSE_FIELDS).join(', ')}`);
    } else if (names !== undefined && !(Array.isArray(names) && names.length > 0 && names.every((n) => typeof n === 'string' && n !== ''))) {
      problems.push(`option 'responseFields.${key}' must be a non-empty list of field names, e.g. ['${key}']`);
    }
  }
}

function checkEndpoints(endpoints: Partial<PaymentEndpoints> | undefined, problems: string[]): void {
  for (const [key, v] of Object.entries(endpoints ?? {})) {
    if (v === undefined) continue;
    if (!(key in DEFAULT_PAYMENT_ENDPOINTS)) {
      problems.push(`option 'endpoints.${key}' is unknown; known: ${Object.keys(DEFAULT_PAYMENT_ENDPOINTS).join(', ')}`);
    } else if (typeof v !== 'string' || (key !== 'paymentStatusParam' && !v.startsWith('/'))) {
      problems.push(
        key === 'paymentStatusParam'
          ? `option 'endpoints.${key}' must be a query parameter name`
          : `option 'endpoints.${key}' must be a path starting with '/'`,
      );
    }
  }
}

/**
 * Merges explicit options over environment values over defaults, validates the result and
 * returns what every provider reads. Throws one PaymentConfigurationError naming every bad key.
 */
export function resolvePaymentOptions(
  explicit: PaymentModuleOptions = {},
  env: PaymentEnvValues = {},
  account: string = DEFAULT_PAYMENT_ACCOUNT,
): ResolvedPaymentOptions {
  const describe = (key: string): string => describeKey(key, explicit, account);
  const envOptions = envToOptions(env);
  const pick = <K extends string>(key: K): unknown => {
    const own = (explicit as Record<string, unknown>)[key];
    return own !== undefined ? own : envOptions[key];
  };

  const schema = Object.assign(new PaymentOptionsSchema(), {
    baseUrl: pick('baseUrl'),
    environment: pick('environment') ?? PAYMENT_OPTION_DEFAULTS.environment,
    clientId: pick('clientId'),
    clientSecret: pick('clientSecret'),
    webhookSecret: splitSecrets(pick('webhookSecret')) ?? [],
    webhookPath: pick('webhookPath') ?? defaultWebhookPath(account),
    webhookToleranceSeconds: pick('webhookToleranceSeconds') ?? PAYMENT_OPTION_DEFAULTS.webhookToleranceSeconds,
    webhookMaxBodyBytes: pick('webhookMaxBodyBytes') ?? PAYMENT_OPTION_DEFAULTS.webhookMaxBodyBytes,
    httpTimeoutMs: pick('httpTimeoutMs') ?? PAYMENT_OPTION_DEFAULTS.httpTimeoutMs,
    maxRetries: pick('maxRetries') ?? PAYMENT_OPTION_DEFAULTS.maxRetries,
    retryBaseDelayMs: pick('retryBaseDelayMs') ?? PAYMENT_OPTION_DEFAULTS.retryBaseDelayMs,
    retryMaxDelayMs: pick('retryMaxDelayMs') ?? PAYMENT_OPTION_DEFAULTS.retryMaxDelayMs,
    maxRetryAfterMs: pick('maxRetryAfterMs') ?? PAYMENT_OPTION_DEFAULTS.maxRetryAfterMs,
    redisUrl: pick('redisUrl'),
    webhookLeaseMs: pick('webhookLeaseMs') ?? PAYMENT_OPTION_DEFAULTS.webhookLeaseMs,
    webhookRetentionMs: pick('webhookRetentionMs') ?? PAYMENT_OPTION_DEFAULTS.webhookRetentionMs,
    memoryStoreMaxEntries: pick('memoryStoreMaxEntries') ?? PAYMENT_OPTION_DEFAULTS.memoryStoreMaxEntries,
    reconcile: pick('reconcile') ?? PAYMENT_OPTION_DEFAULTS.reconcile,
  } satisfies Record<SchemaKey, unknown>);

  const problems: string[] = [];
  for (const { key, messages } of flattenErrors(validateSync(schema))) {
    if (key === 'baseUrl' && schema.baseUrl === undefined) {
      problems.push(`${describe(key)} is required: the service base URL, e.g. https://payments.example.com`);
      continue;
    }
    problems.push(`${describe(key)} ${messages.join('; ')}`);
  }

  // Cross-field rules the decorators cannot express.
  if ((schema.clientId === undefined) !== (schema.clientSecret === undefined)) {
    const missing = schema.clientId === undefined ? 'clientId' : 'clientSecret';
    problems.push(`${describe(missing)} is required when ${missing === 'clientId' ? 'clientSecret' : 'clientId'} is set`);
  }
  if (schema.reconcile === true && schema.clientId === undefined) {
    problems.push(`${describe('reconcile')} needs clientId and clientSecret: reconciliation reads GET /payment/status`);
  }
  if (typeof schema.redisUrl === 'string' && /^rediss?:\/\/\S+$/.test(schema.redisUrl) && !URL.canParse(schema.redisUrl)) {
    problems.push(`${describe('redisUrl')} must be a parsable redis:// or rediss:// URL (check the port and percent-encode special characters)`);
  }
  if (Number.isInteger(schema.webhookRetentionMs) && Number.isInteger(schema.webhookLeaseMs) && schema.webhookRetentionMs < schema.webhookLeaseMs) {
    problems.push(`${describe('webhookRetentionMs')} must be at least webhookLeaseMs`);
  }
  checkEndpoints(explicit.endpoints, problems);
  checkPositiveInts('tokenResponse', {
    defaultExpiresInSeconds: explicit.tokenResponse?.defaultExpiresInSeconds,
    refreshMarginSeconds: explicit.tokenResponse?.refreshMarginSeconds,
  }, problems);
  checkRateLimits(explicit.rateLimits, problems);
  checkResponseFields(explicit.responseFields, problems);
  if (explicit.store !== undefined && typeof (explicit.store as { claim?: unknown }).claim !== 'function') {
    problems.push(`option 'store' must implement WebhookEventStore (claim, complete, release)`);
  }

  if (problems.length > 0) throw new PaymentConfigurationError(problems, account);

  const environment = schema.environment as ResolvedPaymentOptions['environment'];
  const baseUrl = schema.baseUrl.replace(/\/+$/, '');
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
    apiBaseUrl: baseUrl + (environment === 'live' ? LIVE_BASE_PATH : SANDBOX_BASE_PATH),
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
    tokenResponse,
    responseFields,
    rateLimits,
    redisUrl: schema.redisUrl,
    store: explicit.store,
    webhookLeaseMs: schema.webhookLeaseMs,
    webhookRetentionMs: schema.webhookRetentionMs,
    memoryStoreMaxEntries: schema.memoryStoreMaxEntries,
    reconcile: schema.reconcile,
  });
}

/** `payments/webhook` for the default account, `payments/<account>/webhook` for a named one. */
function defaultWebhookPath(account: string): string {
  return account === DEFAULT_PAYMENT_ACCOUNT ? PAYMENT_OPTION_DEFAULTS.webhookPath : `payments/${account}/webhook`;
}

const REDACTED = '[redacted]';

/** Keeps secrets usable by the providers but out of JSON.stringify, util.inspect and so out of logs. */
function withRedactedSecrets(options: ResolvedPaymentOptions): ResolvedPaymentOptions {
  const redacted = () => ({
    ...options,
    clientSecret: options.clientSecret === undefined ? undefined : REDACTED,
    webhookSecrets: options.webhookSecrets.map(() => REDACTED),
    redisUrl: options.redisUrl === undefined ? undefined : redactRedisUrl(options.redisUrl),
    store: options.store ? options.store.constructor?.name ?? 'custom store' : undefined,
  });
  Object.defineProperty(options, 'toJSON', { value: redacted, enumerable: false });
  Object.defineProperty(options, Symbol.for('nodejs.util.inspect.custom'), { value: redacted, enumerable: false });
  return options;
}

function stripUndefined<T extends object>(value: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}
