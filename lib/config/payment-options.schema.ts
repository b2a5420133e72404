import {
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
} from 'class-validator';
import { MAX_TIMER_MS } from '../common/promise-timeout.util.js';

/** What a Redis URL option must look like (parsability is checked apart, with its own message). */
export const REDIS_URL_PATTERN = /^rediss?:\/\/\S+$/;

/**
 * Shortest `queueDeadLetterRetentionMs`, and so the shortest retention a dead letter can have:
 * the trim stops its walk at the first failed job younger than this, whatever it was queued with.
 * @internal
 */
export const MIN_DEAD_LETTER_RETENTION_MS = 1000;

/**
 * Bounds of the settings `PaymentWebhookIdempotencyInterceptor` shares with the module's options
 * (its `leaseMs`, `retentionMs`, `shutdownTimeoutMs`): one source for both checks.
 * @internal
 */
export const WEBHOOK_LEASE_MS_RANGE = { min: 100, max: 86_400_000 } as const;
/** @internal */
export const WEBHOOK_RETENTION_MS_RANGE = { min: 1000, max: 31_622_400_000 } as const;
/** @internal */
export const WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE = { min: 0, max: 600_000 } as const;
/** Bounds of `webhookToleranceSeconds`; the retention rule is checked only within them (its message repeats the window). @internal */
export const WEBHOOK_TOLERANCE_SECONDS_RANGE = { min: 1, max: 86_400 } as const;

/** Flat, validated shape of the scalar options. Messages say what is expected, never the value. */
export class PaymentOptionsSchema {
  // no user:password@ part: the base URL is printed (toJSON, inspect, errors), credentials never are;
  // underscores allowed: Docker and Compose service names (http://payment_sim:8080) have them
  @IsUrl(
    { require_tld: false, require_protocol: true, protocols: ['http', 'https'], disallow_auth: true, allow_underscores: true },
    { message: 'must be an absolute http(s) URL of the service, without /api/v1 and without credentials' },
  )
  baseUrl!: string;

  @IsIn(['sandbox', 'live'], { message: "must be 'sandbox' or 'live'" })
  environment!: string;

  // a plain path: segments of letters, digits, '-', '_', '.', no '.' or '..' segment (clients
  // resolve those away), no query; a trailing slash is dropped
  @IsOptional()
  @Matches(/^\/(?!\.{1,2}(\/|$))[A-Za-z0-9._\-]+(\/(?!\.{1,2}(\/|$))[A-Za-z0-9._\-]+)*\/?$/, {
    message: "must be a path such as '/api/v2' (starting with '/'; letters, digits, '-', '_', '.', '/')",
  })
  apiBasePath?: string;

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

  // no ':' (a route parameter in Express and Fastify: `payments/:x` would take every account's
  // deliveries under payments/), nothing else the routers read as syntax, no '.' or '..' segment
  // (clients resolve those away: unreachable)
  @Matches(/^\/?(?!\.{1,2}(\/|$))[A-Za-z0-9._\-]+(\/(?!\.{1,2}(\/|$))[A-Za-z0-9._\-]+)*\/?$/, {
    message: "must be a route path such as 'payments/webhook' (letters, digits, '-', '_', '.', '/')",
  })
  webhookPath!: string;

  @IsInt({ message: 'must be a whole number of seconds' })
  @Min(WEBHOOK_TOLERANCE_SECONDS_RANGE.min, { message: 'must be at least 1 second' })
  @Max(WEBHOOK_TOLERANCE_SECONDS_RANGE.max, { message: `must be at most ${WEBHOOK_TOLERANCE_SECONDS_RANGE.max} seconds` })
  webhookToleranceSeconds!: number;

  @IsInt({ message: 'must be a whole number of bytes' })
  @Min(1024, { message: 'must be at least 1024 bytes' })
  // a body is held in memory whole before its signature is checked
  @Max(100 * 1024 * 1024, { message: 'must be at most 104857600 bytes (100 MiB)' })
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
  @Max(MAX_TIMER_MS, { message: `must be at most ${MAX_TIMER_MS} ms (a Node timer's limit)` })
  retryBaseDelayMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(0, { message: 'must be 0 or more' })
  @Max(MAX_TIMER_MS, { message: `must be at most ${MAX_TIMER_MS} ms (a Node timer's limit)` })
  retryMaxDelayMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(1000, { message: 'must be at least 1000 ms (Retry-After counts whole seconds)' })
  @Max(3_600_000, { message: 'must be at most 3600000 ms (one hour)' })
  maxRetryAfterMs!: number;

  @IsOptional()
  @Matches(REDIS_URL_PATTERN, { message: 'must be a redis:// or rediss:// URL' })
  redisUrl?: string;

  @IsOptional()
  @Matches(/^[\x21-\x7e]{1,200}$/, { message: 'must be 1-200 printable characters without spaces' })
  redisKeyPrefix?: string;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(100, { message: 'must be at least 100 ms' })
  @Max(60_000, { message: 'must be at most 60000 ms' })
  redisTimeoutMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(WEBHOOK_LEASE_MS_RANGE.min, { message: `must be at least ${WEBHOOK_LEASE_MS_RANGE.min} ms` })
  @Max(WEBHOOK_LEASE_MS_RANGE.max, { message: `must be at most ${WEBHOOK_LEASE_MS_RANGE.max} ms (one day)` })
  webhookLeaseMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(WEBHOOK_RETENTION_MS_RANGE.min, { message: `must be at least ${WEBHOOK_RETENTION_MS_RANGE.min} ms` })
  @Max(WEBHOOK_RETENTION_MS_RANGE.max, { message: `must be at most ${WEBHOOK_RETENTION_MS_RANGE.max} ms (366 days)` })
  webhookRetentionMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE.min, { message: `must be ${WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE.min} or more` })
  @Max(WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE.max, { message: `must be at most ${WEBHOOK_SHUTDOWN_TIMEOUT_MS_RANGE.max} ms` })
  webhookShutdownTimeoutMs!: number;

  @IsInt({ message: 'must be a whole number' })
  @Min(1, { message: 'must be at least 1' })
  @Max(Number.MAX_SAFE_INTEGER, { message: `must be at most ${Number.MAX_SAFE_INTEGER}` })
  memoryStoreMaxEntries!: number;

  @IsBoolean({ message: "must be true or false (true/false, 1/0, yes/no or on/off in the environment)" })
  reconcile!: boolean;

  @IsIn(['inline', 'queue'], { message: "must be 'inline' or 'queue'" })
  processing!: string;

  @IsOptional()
  @Matches(REDIS_URL_PATTERN, { message: 'must be a redis:// or rediss:// URL' })
  queueRedisUrl?: string;

  @IsBoolean({ message: "must be true or false (true/false, 1/0, yes/no or on/off in the environment)" })
  queueWorker!: boolean;

  @IsInt({ message: 'must be a whole number' })
  @Min(1, { message: 'must be at least 1' })
  @Max(1000, { message: 'must be at most 1000' })
  queueConcurrency!: number;

  @IsInt({ message: 'must be a whole number' })
  @Min(1, { message: 'must be at least 1' })
  @Max(100, { message: 'must be at most 100' })
  queueAttempts!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(0, { message: 'must be 0 or more' })
  @Max(3_600_000, { message: 'must be at most 3600000 ms (one hour)' })
  queueBackoffMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(MIN_DEAD_LETTER_RETENTION_MS, { message: `must be at least ${MIN_DEAD_LETTER_RETENTION_MS} ms` })
  @Max(31_622_400_000, { message: 'must be at most 31622400000 ms (366 days)' })
  queueDeadLetterRetentionMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(0, { message: 'must be 0 or more' })
  @Max(600_000, { message: 'must be at most 600000 ms' })
  queueShutdownTimeoutMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(1000, { message: 'must be at least 1000 ms' })
  @Max(86_400_000, { message: 'must be at most 86400000 ms (one day)' })
  queueJobTimeoutMs!: number;

  @IsInt({ message: 'must be a whole number of milliseconds' })
  @Min(1000, { message: 'must be at least 1000 ms' })
  @Max(600_000, { message: 'must be at most 600000 ms' })
  queueLockDurationMs!: number;

  @IsInt({ message: 'must be a whole number' })
  @Min(0, { message: 'must be 0 or more' })
  @Max(100, { message: 'must be at most 100' })
  queueMaxStalledCount!: number;
}

export type PaymentOptionsSchemaKey = keyof PaymentOptionsSchema;
