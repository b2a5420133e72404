import { validateSync, type ValidationError } from 'class-validator';
import { isApiPath } from '../common/api-path.util.js';
import { isRecord } from '../common/is-record.util.js';
import { PAYMENT_ENV_VARIABLES, paymentEnvSources, type PaymentEnvOptionKey } from './payment-env.js';
import { misspeltVariableHint } from './payment-env-typos.js';
import { DEFAULT_PAYMENT_ENDPOINTS, DEFAULT_RATE_LIMITS, DEFAULT_RESPONSE_FIELDS, DEFAULT_TOKEN_REQUEST, DEFAULT_TOKEN_RESPONSE } from './payment-options.defaults.js';
import type { PaymentEndpoints, PaymentModuleOptions } from './payment-module-options.interface.js';
import { type PaymentOptionsSchema, REDIS_URL_PATTERN, WEBHOOK_TOLERANCE_SECONDS_RANGE } from './payment-options.schema.js';
import { checkUnknownKeys, isBuiltInContainer } from './payment-option-keys.validation.js';
import { givenValue } from './payment-options.redaction.js';
import { misplacedPasswordTail, undecodableRedisUrlPart, URL_SCHEME } from './redact-url.js';
import { isQuoted, looksLikeJsonOrQuoted } from './quoted-values.js';

/** What validation needs beside the merged options. */
export interface PaymentOptionsValidationContext {
  /** `false`: no variable was read, so errors name options only. @default true */
  readEnv?: boolean;
  /** `webhookSecret` as given (option, else variable), before it was split into secrets. */
  givenWebhookSecret?: unknown;
}

function describeKey(key: string, explicit: PaymentModuleOptions, account: string, readEnv = true): string {
  // with readEnv: false a variable is no way to fix it, however it is set
  if (!(key in PAYMENT_ENV_VARIABLES) || !readEnv) return `option '${key}'`;
  const envName = paymentEnvSources(key as PaymentEnvOptionKey, account);
  // Name the place the value came from (or, when absent, the variable most users set).
  const givenExplicitly = (explicit as Record<string, unknown>)[key] != null;
  return givenExplicitly ? `option '${key}' (env ${envName})` : `${envName} (option '${key}')`;
}

function flattenErrors(errors: ValidationError[]): Array<{ key: string; messages: string[] }> {
  return errors.map((e) => {
    const constraints = e.constraints ?? {};
    // `2.5` or `abc` is not a whole number: its range messages would only confuse
    if (constraints.isInt !== undefined) return { key: e.property, messages: [constraints.isInt] };
    return { key: e.property, messages: [...new Set(Object.values(constraints))] };
  });
}

/** What the module calls on a store; the optional ones, when present, must be functions too (an `extend` that is not would fail every renewal). */
const [STORE_METHODS, OPTIONAL_STORE_METHODS] = [['claim', 'complete', 'release'], ['extend', 'isProcessed', 'ping', 'close']] as const;

const isFieldName = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isFieldNameList = (v: unknown): v is string[] => Array.isArray(v) && v.length > 0 && v.every(isFieldName);
const unknownKey = (group: string, key: string, known: object): string =>
  `option '${group}.${key}' is unknown; known: ${Object.keys(known).join(', ')}`;

/** An object of options: a `Map` (or another built-in container) keeps its entries where none is read. */
function isOptionGroup(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && !isBuiltInContainer(value);
}

/**
 * How token answers are read: a lifetime of 0 would make every call fetch a token (and meet
 * the token rate limit), an empty field list would fail every call, so both stop the boot.
 */
function checkTokenResponse(value: unknown, problems: string[]): void {
  if (value === undefined) return;
  if (!isOptionGroup(value)) {
    problems.push(`option 'tokenResponse' must be an object`);
    return;
  }
  const bad = (key: string, rule: string) => problems.push(`option 'tokenResponse.${key}' must be ${rule}`);
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    switch (key) {
      case 'tokenFields':
        if (!isFieldNameList(v)) bad(key, "a non-empty list of field names, e.g. ['access_token']");
        break;
      case 'expiresInField':
        if (!isFieldName(v)) bad(key, "a field name, e.g. 'expires_in'");
        break;
      case 'defaultExpiresInSeconds':
      case 'maxExpiresInSeconds':
        if (!(Number.isInteger(v) && (v as number) >= 1)) bad(key, 'a whole number of seconds, at least 1');
        break;
      case 'refreshMarginSeconds':
        if (!(Number.isInteger(v) && (v as number) >= 0)) bad(key, 'a whole number of seconds, 0 or more');
        break;
      default:
        problems.push(unknownKey('tokenResponse', key, DEFAULT_TOKEN_RESPONSE));
    }
  }
}

/** How the token call's body is written: field names and one of the two encodings. */
function checkTokenRequest(value: unknown, problems: string[]): void {
  if (value === undefined) return;
  if (!isOptionGroup(value)) {
    problems.push(`option 'tokenRequest' must be an object`);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    if (key === 'clientIdField' || key === 'clientSecretField') {
      if (!isFieldName(v)) problems.push(`option 'tokenRequest.${key}' must be a field name, e.g. '${DEFAULT_TOKEN_REQUEST[key]}'`);
    } else if (key === 'encoding') {
      if (v !== 'json' && v !== 'form') problems.push(`option 'tokenRequest.encoding' must be 'json' or 'form'`);
    } else {
      problems.push(unknownKey('tokenRequest', key, DEFAULT_TOKEN_REQUEST));
    }
  }
}

/** A string that looks like a Redis URL but does not parse (a bad port, an unencoded special character). */
function checkRedisUrl(key: 'redisUrl' | 'queueRedisUrl', url: unknown, describe: (key: string) => string, problems: string[]): void {
  if (typeof url !== 'string' || !REDIS_URL_PATTERN.test(url)) return;
  if (!URL.canParse(url)) {
    problems.push(`${describe(key)} must be a parsable redis:// or rediss:// URL (check the port and percent-encode special characters)`);
    return;
  }
  const parsed = new URL(url);
  // a password with an unencoded '/', '?' or '#' ends the user info early: its tail becomes a path or query
  switch (misplacedPasswordTail(parsed)) {
    case 'path':
      problems.push(`${describe(key)} has a path that is not a db number: percent-encode '/' in the password (%2F)`);
      return;
    case 'query':
      problems.push(`${describe(key)} has an '@' after a '?' or '#': percent-encode '?' and '#' in the password (%3F, %23), or the rest of it is read as a query`);
      return;
  }
  // ioredis decodes these: a bare '%' would fail the boot with 'URI malformed', naming neither account nor key
  const undecodable = undecodableRedisUrlPart(parsed);
  if (undecodable) problems.push(`${describe(key)} has a '%' not followed by two hex digits in its ${undecodable}: percent-encode '%' as %25`);
}

/** Each limit is a whole number of requests per minute, at least 1: a limit of 0 would queue calls forever. */
function checkRateLimits(limits: unknown, problems: string[]): void {
  if (limits === undefined || limits === false) return;
  if (!isOptionGroup(limits)) {
    problems.push(`option 'rateLimits' must be an object of per-minute limits, or false`);
    return;
  }
  for (const [key, v] of Object.entries(limits)) {
    if (!(key in DEFAULT_RATE_LIMITS)) {
      problems.push(unknownKey('rateLimits', key, DEFAULT_RATE_LIMITS));
    } else if (v !== undefined && !(Number.isInteger(v) && (v as number) >= 1)) {
      problems.push(`option 'rateLimits.${key}' must be a whole number of requests per minute, at least 1`);
    }
  }
}

/** Each list names at least one field; a list replaces the default. */
function checkResponseFields(fields: unknown, problems: string[]): void {
  if (fields === undefined) return;
  if (!isOptionGroup(fields)) {
    problems.push(`option 'responseFields' must be an object of field-name lists`);
    return;
  }
  for (const [key, names] of Object.entries(fields)) {
    if (!(key in DEFAULT_RESPONSE_FIELDS)) {
      problems.push(unknownKey('responseFields', key, DEFAULT_RESPONSE_FIELDS));
    } else if (names !== undefined && !isFieldNameList(names)) {
      problems.push(`option 'responseFields.${key}' must be a non-empty list of field names, e.g. ['${key}']`);
    }
  }
}

/** The id placeholder each lookup path must hold (once): without it every call would address one resource. */
const ENDPOINT_PLACEHOLDERS: Partial<Record<keyof PaymentEndpoints, string>> = {
  refund: '{trx_id}',
  refundLookup: '{refund_uid}',
  payoutLookup: '{payout_uid}',
};

/**
 * Endpoint overrides: paths under the API base (a `//host` path or a dot segment would send
 * the bearer token elsewhere), with their id placeholder where the call needs one.
 */
function checkEndpoints(endpoints: Partial<PaymentEndpoints> | undefined, problems: string[]): void {
  if (endpoints === undefined || endpoints === null) return;
  // 5, true or [] has no entries to check: it would boot on the default paths
  if (!isOptionGroup(endpoints)) {
    problems.push(`option 'endpoints' must be an object of paths, e.g. { refund: '/payment/{trx_id}/refund' }`);
    return;
  }
  for (const [key, v] of Object.entries(endpoints)) {
    if (v === undefined) continue;
    if (!(key in DEFAULT_PAYMENT_ENDPOINTS)) {
      problems.push(unknownKey('endpoints', key, DEFAULT_PAYMENT_ENDPOINTS));
    } else if (key === 'paymentStatusParam') {
      if (typeof v !== 'string' || !/^[A-Za-z0-9_.\-[\]]+$/.test(v)) problems.push(`option 'endpoints.${key}' must be a query parameter name, e.g. 'trx_id'`);
    } else if (!isApiPath(v)) {
      problems.push(`option 'endpoints.${key}' must be a path starting with '/', without '//', query, fragment, spaces or dot segments`);
    } else {
      const placeholder = ENDPOINT_PLACEHOLDERS[key as keyof PaymentEndpoints];
      const holes = v.match(/\{[^}]*\}/g) ?? [];
      if (placeholder && (holes.length !== 1 || holes[0] !== placeholder)) {
        problems.push(`option 'endpoints.${key}' must hold the placeholder ${placeholder} once, e.g. '${DEFAULT_PAYMENT_ENDPOINTS[key as keyof PaymentEndpoints]}'`);
      } else if (!placeholder && holes.length > 0) {
        problems.push(`option 'endpoints.${key}' takes no placeholder (found ${holes.join(', ')})`);
      }
    }
  }
}

/**
 * Every problem of one account's merged options: the schema's decorators, then the rules
 * across fields and the nested objects the decorators cannot express. Each message names
 * the key (and its env variable), never the value.
 */
export function validatePaymentOptions(
  schema: PaymentOptionsSchema,
  explicit: PaymentModuleOptions,
  account: string,
  context: PaymentOptionsValidationContext = {},
): string[] {
  const describe = (key: string): string => describeKey(key, explicit, account, context.readEnv);
  const problems: string[] = [];
  const schemaErrors = flattenErrors(validateSync(schema));
  for (const { key, messages } of schemaErrors) {
    if (key === 'baseUrl' && schema.baseUrl === undefined) {
      const misspelt = context.readEnv === false ? '' : misspeltVariableHint('baseUrl', account);
      problems.push(`${describe(key)} is required: the service base URL, e.g. https://payments.example.com${misspelt}`);
      continue;
    }
    // a factory passing ConfigService.get() values gives numbers and booleans as text
    const number = messages.some((m) => /whole number/.test(m));
    const givenAsText = typeof (explicit as Record<string, unknown>)[key] === 'string' && (number || messages.some((m) => /true or false/.test(m)));
    const conversion = number ? 'to a number, e.g. Number(value)' : 'to true or false';
    const hint = givenAsText ? ` (an option given as text, as ConfigService.get() returns environment values: convert it ${conversion})` : '';
    problems.push(`${describe(key)} ${messages.join('; ')}${givenValue(key, schema as unknown as Record<string, unknown>)}${hint}`);
  }

  // a base URL the schema accepted can still be one the API path cannot be appended to
  if (typeof schema.baseUrl === 'string' && !schemaErrors.some((e) => e.key === 'baseUrl')) {
    const baseUrlProblem = baseUrlShapeProblem(schema.baseUrl);
    if (baseUrlProblem) problems.push(`${describe('baseUrl')} ${baseUrlProblem}`);
  }

  // Cross-field rules the decorators cannot express.
  if ((schema.clientId === undefined) !== (schema.clientSecret === undefined)) {
    const missing = schema.clientId === undefined ? 'clientId' : 'clientSecret';
    problems.push(`${describe(missing)} is required when ${missing === 'clientId' ? 'clientSecret' : 'clientId'} is set`);
  }
  if (schema.reconcile === true && schema.clientId === undefined) {
    problems.push(`${describe('reconcile')} needs clientId and clientSecret: reconciliation reads GET /payment/status`);
  }
  checkRedisUrl('redisUrl', schema.redisUrl, describe, problems);
  checkRedisUrl('queueRedisUrl', schema.queueRedisUrl, describe, problems);
  if (schema.processing === 'queue' && schema.queueRedisUrl === undefined && schema.redisUrl === undefined) {
    problems.push(
      `${describe('queueRedisUrl')} or ${describe('redisUrl')} is required when processing is 'queue': the queue lives in Redis`,
    );
  }
  if (Number.isInteger(schema.webhookRetentionMs) && Number.isInteger(schema.webhookLeaseMs) && schema.webhookRetentionMs < schema.webhookLeaseMs) {
    problems.push(`${describe('webhookRetentionMs')} must be at least webhookLeaseMs`);
  }
  // only for a tolerance that passed its own check: a BigInt or a Symbol there would throw here, and an
  // out-of-range one (a secret read into its variable) would be repeated, times 2000, in this message
  const tolerance = schema.webhookToleranceSeconds;
  const toleranceInRange = Number.isInteger(tolerance) && tolerance >= WEBHOOK_TOLERANCE_SECONDS_RANGE.min && tolerance <= WEBHOOK_TOLERANCE_SECONDS_RANGE.max;
  const replayWindowMs = toleranceInRange ? signatureReplayWindowMs(tolerance) : Number.NaN;
  if (Number.isInteger(schema.webhookRetentionMs) && schema.webhookRetentionMs < replayWindowMs) {
    problems.push(
      `${describe('webhookRetentionMs')} must be at least twice webhookToleranceSeconds (${replayWindowMs} ms): ` +
        'a copy of a signed delivery is accepted that long, and would run its handlers again once its id is forgotten',
    );
  }
  // A secret given that names none ('', ' , ', []) is a mistake (`process.env.X ?? ''`), not "no
  // secret": it would hide the env's secret and, silently, the route.
  const givenSecret = context.givenWebhookSecret;
  if ((typeof givenSecret === 'string' || Array.isArray(givenSecret)) && schema.webhookSecret.length === 0) {
    const fromOption = (explicit as Record<string, unknown>).webhookSecret != null;
    const envName = paymentEnvSources('webhookSecret', account);
    const instead = !fromOption ? `unset ${envName} or give it a secret` : context.readEnv === false ? 'leave it out' : `leave it out (${envName} then applies)`;
    problems.push(`${describe('webhookSecret')} names no secret (it is empty, or only commas and spaces): ${instead}; for no route, remove it and set webhookRoute: false`);
  }
  // a JSON list (["whsec_a","whsec_b"]) or a quoted value would become secrets with brackets and quotes
  // in them; a secret that merely starts or ends with such a character is a secret like any other
  // the schema already refused a secret that is neither text nor a list (a number from YAML): checked on lists only
  if (looksLikeJsonOrQuoted(givenSecret, Array.isArray(schema.webhookSecret) ? schema.webhookSecret : [])) {
    problems.push(`${describe('webhookSecret')} looks like JSON or a quoted string: give the secrets as plain text separated by commas (whsec_new,whsec_old)`);
  }
  // an env file read with its quotes kept (docker --env-file): every token call a PAY_1004, or
  // Redis keys no instance given the prefix without quotes shares
  for (const key of ['clientId', 'clientSecret', 'redisKeyPrefix'] as const) {
    if (isQuoted(schema[key])) problems.push(`${describe(key)} is wrapped in quotes: give it without them (an env file's quotes are kept by some readers)`);
  }
  // a Redis URL in the prefix's variable: its password would be in every key and the boot's log lines
  if (typeof schema.redisKeyPrefix === 'string' && URL_SCHEME.test(schema.redisKeyPrefix)) problems.push(`${describe('redisKeyPrefix')} looks like a URL: a Redis URL goes in redisUrl (${paymentEnvSources('redisUrl', account)})`);
  // one secret per line (a secrets file) would be one secret with a line break in it: every delivery a 401
  if (Array.isArray(schema.webhookSecret) && schema.webhookSecret.some((secret) => typeof secret === 'string' && /[\s\0]/.test(secret))) {
    problems.push(`${describe('webhookSecret')} has a secret with a space, line break, tab or NUL inside: separate several secrets with commas (whsec_new,whsec_old)`);
  }
  const retrySchedule = queueRetryScheduleProblem(schema.queueAttempts, schema.queueBackoffMs);
  if (retrySchedule) problems.push(`${describe('queueAttempts')} and ${describe('queueBackoffMs')} ${retrySchedule}`);
  checkUnknownKeys(explicit, problems);
  checkEndpoints(explicit.endpoints, problems);
  checkTokenRequest(explicit.tokenRequest, problems);
  checkTokenResponse(explicit.tokenResponse, problems);
  checkRateLimits(explicit.rateLimits, problems);
  checkResponseFields(explicit.responseFields, problems);
  const store = explicit.store as unknown as Record<string, unknown> | null | undefined;
  if (store != null) {
    const required = STORE_METHODS.filter((m) => typeof store[m] !== 'function');
    const notMethods = [...required, ...OPTIONAL_STORE_METHODS.filter((m) => store[m] !== undefined && typeof store[m] !== 'function')];
    if (notMethods.length > 0) problems.push(`option 'store' must implement WebhookEventStore (${STORE_METHODS.join(', ')}; optional: ${OPTIONAL_STORE_METHODS.join(', ')}): not a function: ${notMethods.join(', ')}`);
  }
  return problems;
}

/**
 * How long a captured delivery passes the signature check again: while its timestamp is within
 * the tolerance, either side of now. An event's id must be remembered at least that long, or a
 * copy runs its handlers again once the id is forgotten.
 */
export function signatureReplayWindowMs(toleranceSeconds: number): number {
  return 2 * toleranceSeconds * 1000;
}

/** The longest a failing event may keep being retried in queue mode before it becomes a dead letter. */
const MAX_QUEUE_RETRY_SCHEDULE_MS = 7 * 24 * 3_600_000;

/**
 * BullMQ's exponential backoff has no ceiling: `queueBackoffMs` doubles with every attempt, so
 * 40 attempts of 1 s put the last retry thousands of years away, and a failing event would sit
 * in the delayed set, never a dead letter, never listed. The whole schedule must fit in a week.
 */
function queueRetryScheduleProblem(attempts: unknown, backoffMs: unknown): string | undefined {
  if (!Number.isInteger(attempts) || !Number.isInteger(backoffMs) || (attempts as number) < 2) return undefined;
  const scheduleMs = (backoffMs as number) * (2 ** ((attempts as number) - 1) - 1);
  if (scheduleMs <= MAX_QUEUE_RETRY_SCHEDULE_MS) return undefined;
  const days = scheduleMs / 86_400_000;
  return (
    `put the last retry ${days < 1e6 ? `${Math.round(days).toLocaleString('en-US')} days` : 'more than a million days'} after the first run ` +
    '(the delay doubles with every attempt): a failing event would not become a dead letter in practice. Keep it within 7 days: lower either'
  );
}

/**
 * What `IsUrl` lets through but the client cannot use: the API path is appended to the base
 * URL, so a query or fragment would swallow it and `/api/v1` would appear twice.
 */
function baseUrlShapeProblem(baseUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return undefined; // not reached: IsUrl refuses what URL cannot parse
  }
  if (url.search !== '' || url.hash !== '' || baseUrl.includes('?') || baseUrl.includes('#')) {
    return 'must not have a query or fragment: the API path is appended to it';
  }
  if (/\/(api\/v1|sandbox)\/*$/i.test(url.pathname)) {
    // no example built from the value: the base URL is never printed, and its origin alone would drop a path prefix
    return 'must be given without /api/v1 and without /sandbox: the module appends them (keep any path before them, e.g. https://host/prefix)';
  }
  return undefined;
}
