import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';

/** @publicApi */
export type PaymentEnvironment = 'sandbox' | 'live';

/**
 * Where an account's handlers run: `'inline'` inside the webhook request, `'queue'` in a
 * BullMQ worker after the route has acknowledged the event.
 * @publicApi
 */
export type PaymentProcessingMode = 'inline' | 'queue';

/**
 * Paths and parameter names of the service's calls. Those its document does not show (the status
 * parameter, the lookups, subaccounts) are assumptions listed in the README; override any of them here.
 * @publicApi
 */
export interface PaymentEndpoints {
  /** @default '/authentication/token' */
  token: string;
  /** @default '/payment/create' */
  createPayment: string;
  /** @default '/payment/status' */
  paymentStatus: string;
  /** Query parameter of the status call that carries the transaction id. @default 'trx_id' */
  paymentStatusParam: string;
  /** @default '/payments/gateways' */
  gateways: string;
  /** `{trx_id}` is replaced by the URL-encoded transaction id. @default '/payment/{trx_id}/refund' */
  refund: string;
  /** @default '/refund/{refund_uid}' */
  refundLookup: string;
  /** @default '/payout' */
  payout: string;
  /** @default '/payout/{payout_uid}' */
  payoutLookup: string;
  /**
   * `request()` paths starting with this are subaccount operations: they count in the
   * refunds/payouts limit (`moneyMovementPerMinute`), reads included. @default '/subaccount'
   */
  subaccountPrefix: string;
}

/** How to write the token call's body (its shape is not published). @publicApi */
export interface PaymentTokenRequestOptions {
  /** Body field carrying the client id. @default 'client_id' */
  clientIdField: string;
  /** Body field carrying the client secret. @default 'client_secret' */
  clientSecretField: string;
  /** `'json'` (`application/json`) or `'form'` (`application/x-www-form-urlencoded`, as OAuth 2 token endpoints take). @default 'json' */
  encoding: 'json' | 'form';
}

/** How to read the token call's response (its fields are not published). @publicApi */
export interface PaymentTokenResponseOptions {
  /** Fields of `data` tried in order for the token. @default ['access_token', 'accessToken', 'token'] */
  tokenFields: string[];
  /** Field of `data` holding the lifetime in seconds. @default 'expires_in' */
  expiresInField: string;
  /** Lifetime assumed when the response has none (tokens live 10 minutes); at least 1. @default 600 */
  defaultExpiresInSeconds: number;
  /**
   * A longer lifetime in the answer is cut to this: the service documents 10 minutes, and a
   * token kept past its real expiry costs a rejected call. At least 1. @default 600
   */
  maxExpiresInSeconds: number;
  /** A cached token is renewed this long before it expires. @default 60 */
  refreshMarginSeconds: number;
}

/**
 * Where success answers carry the ids and the status (payloads are not published). Each
 * list is tried in order and replaces the default; the value found is copied to the
 * camelCase field of the returned record.
 * @publicApi
 */
export interface PaymentResponseFields {
  /** @default ['trxId', 'trx_id'] */
  trxId: string[];
  /** @default ['refundUid', 'refund_uid'] */
  refundUid: string[];
  /** @default ['payoutUid', 'payout_uid'] */
  payoutUid: string[];
  /** @default ['status'] */
  status: string[];
}

/** Client-side limits: the service's per-minute limits. Requests beyond a limit wait in a queue instead of failing. @publicApi */
export interface PaymentRateLimits {
  /** Token requests per minute (per IP). @default 10 */
  tokenPerMinute: number;
  /** Payment creations per minute per access token. @default 30 */
  createPaymentPerMinute: number;
  /** Status and gateway reads per minute per access token. @default 60 */
  readsPerMinute: number;
  /** Refunds, payouts and subaccount operations per minute per client id. @default 30 */
  moneyMovementPerMinute: number;
}

/** @publicApi */
export interface PaymentModuleOptions {
  /** Service base URL, without the `/api/v1` part. Env: `PAYMENT_BASE_URL`. Required. */
  baseUrl?: string | undefined;
  /** Picks `/sandbox/api/v1` or `/api/v1`. Env: `PAYMENT_ENVIRONMENT`. @default 'sandbox' */
  environment?: PaymentEnvironment | undefined;
  /**
   * The API's path under `baseUrl`, for an API version other than v1 (the service shows no
   * version policy). Env: `PAYMENT_API_BASE_PATH`.
   * @default '/sandbox/api/v1' in sandbox, '/api/v1' in live
   */
  apiBasePath?: string | undefined;
  /** Env: `PAYMENT_CLIENT_ID`. Required to call the API. Trimmed. */
  clientId?: string | undefined;
  /** Env: `PAYMENT_CLIENT_SECRET`. Required to call the API. Trimmed; never logged. */
  clientSecret?: string | undefined;
  /**
   * Webhook signing secret(s). Several are accepted during a rotation. The webhook
   * route exists only when at least one is set. Env: `PAYMENT_WEBHOOK_SECRET`
   * (comma-separated). A string given here is split on commas too; pass an array to keep
   * a comma inside a secret. Never logged.
   */
  webhookSecret?: string | string[] | undefined;
  /** Route of the webhook receiver. Env: `PAYMENT_WEBHOOK_PATH`. @default 'payments/webhook' */
  webhookPath?: string | undefined;
  /** Accepted clock difference of the signature timestamp. Env: `PAYMENT_WEBHOOK_TOLERANCE_SECONDS`. @default 300 */
  webhookToleranceSeconds?: number | undefined;
  /** Largest webhook body accepted, in bytes. Env: `PAYMENT_WEBHOOK_MAX_BODY_BYTES`. @default 1048576 */
  webhookMaxBodyBytes?: number | undefined;
  /** Time-out of one HTTP request to the service. Env: `PAYMENT_HTTP_TIMEOUT_MS`. @default 15000 */
  httpTimeoutMs?: number | undefined;
  /** Retries after the first attempt (where a retry is safe). Env: `PAYMENT_MAX_RETRIES`. @default 3 */
  maxRetries?: number | undefined;
  /** First backoff delay; doubles each retry, with full jitter. @default 200 */
  retryBaseDelayMs?: number | undefined;
  /** Upper bound of one backoff delay. @default 30000 */
  retryMaxDelayMs?: number | undefined;
  /**
   * Longest `Retry-After` of a 429 that is waited out (in full) before the retry; a longer
   * one throws `PaymentRateLimitError` at once instead of retrying early. @default 120000
   */
  maxRetryAfterMs?: number | undefined;
  /** Overrides of paths the service does not publish. */
  endpoints?: Partial<PaymentEndpoints> | undefined;
  /** How to write the token call's body. */
  tokenRequest?: Partial<PaymentTokenRequestOptions> | undefined;
  /** How to read the token response. */
  tokenResponse?: Partial<PaymentTokenResponseOptions> | undefined;
  /** Where to read ids and status in success answers. */
  responseFields?: Partial<PaymentResponseFields> | undefined;
  /** Client-side rate limits; `false` turns the queue off. */
  rateLimits?: Partial<PaymentRateLimits> | false | undefined;
  /**
   * Redis URL for `RedisWebhookEventStore` (needs `ioredis`). Accounts with the same URL (and
   * `redisTimeoutMs`) share one connection. Env: `PAYMENT_REDIS_URL` (a named account without its own variable uses it too).
   */
  redisUrl?: string | undefined;
  /**
   * Prefix of every Redis key the store writes, so two apps, or sandbox and live, can share one
   * Redis without seeing each other's event ids; keys are further namespaced by account.
   * Env: `PAYMENT_REDIS_KEY_PREFIX`. @default 'payment-gateway:<environment>:'
   */
  redisKeyPrefix?: string | undefined;
  /**
   * Longest wait for Redis on the module's own connections (event store, queue): per command
   * and per connection attempt, and, in queue mode, for the route to have an event in Redis
   * before it answers 503 (the service retries). Env: `PAYMENT_REDIS_TIMEOUT_MS`. @default 2000
   */
  redisTimeoutMs?: number | undefined;
  /** A store instance; wins over `redisUrl`. @default MemoryWebhookEventStore */
  store?: WebhookEventStore | undefined;
  /** How long a delivery may hold an event's claim before another delivery may take it over. Env: `PAYMENT_WEBHOOK_LEASE_MS`. @default 60000 */
  webhookLeaseMs?: number | undefined;
  /** How long processed event ids are remembered. Env: `PAYMENT_WEBHOOK_RETENTION_MS`. @default 604800000 (7 days) */
  webhookRetentionMs?: number | undefined;
  /**
   * On `app.close()`, how long deliveries whose handlers are still running may take to finish
   * (their claims renewed meanwhile), those whose sender already hung up included. Past it
   * their claims lapse and a later copy may run them again. Env: `PAYMENT_WEBHOOK_SHUTDOWN_TIMEOUT_MS`. @default 10000
   */
  webhookShutdownTimeoutMs?: number | undefined;
  /** Most event ids the memory store keeps (least recent evicted first). @default 100000 */
  memoryStoreMaxEntries?: number | undefined;
  /** Read `GET /payment/status` before payment handlers run and attach `canonicalStatus`. Env: `PAYMENT_RECONCILE`. @default false */
  reconcile?: boolean | undefined;
  // --- queue mode (BullMQ) ---
  /**
   * `'inline'`: handlers run inside the webhook request, which is answered once they
   * completed. `'queue'`: the route answers as soon as Redis holds the event and a BullMQ
   * worker runs the handlers, with quick retries and a dead-letter set (needs the optional
   * peers `bullmq` and `ioredis`). Env: `PAYMENT_PROCESSING`. @default 'inline'
   */
  processing?: PaymentProcessingMode | undefined;
  /**
   * Redis of the queue. In queue mode without `redisUrl` or `store`, the event store uses
   * it too. Env: `PAYMENT_QUEUE_REDIS_URL`. @default redisUrl
   */
  queueRedisUrl?: string | undefined;
  /** Run a worker for this account in this instance; `false` on web-only instances. Env: `PAYMENT_QUEUE_WORKER`. @default true */
  queueWorker?: boolean | undefined;
  /** Events one worker handles at the same time. Env: `PAYMENT_QUEUE_CONCURRENCY`. @default 10 */
  queueConcurrency?: number | undefined;
  /** Attempts per event (first run included) before it becomes a dead letter. Env: `PAYMENT_QUEUE_ATTEMPTS`. @default 10 */
  queueAttempts?: number | undefined;
  /**
   * Delay before the first retry; it doubles with every further attempt (up to 20 % shorter,
   * at random). With the defaults the last retry comes about 8.5 minutes after the first
   * run. Env: `PAYMENT_QUEUE_BACKOFF_MS`. @default 1000
   */
  queueBackoffMs?: number | undefined;
  /**
   * How long a dead letter is kept before it is dropped; each event keeps the value it was
   * queued with. Env: `PAYMENT_QUEUE_DEAD_LETTER_RETENTION_MS`. @default 2592000000 (30 days)
   */
  queueDeadLetterRetentionMs?: number | undefined;
  /**
   * At shutdown, how long running handlers may take to finish, counted from the moment the
   * workers of all the app's accounts stopped taking jobs (together); those still running then
   * are left to another worker. Env: `PAYMENT_QUEUE_SHUTDOWN_TIMEOUT_MS`. @default 10000
   */
  queueShutdownTimeoutMs?: number | undefined;
  /**
   * Longest a worker slot waits for one event's handlers. Past it the attempt fails and the slot
   * serves other events; the handler is not stopped and keeps the event's store claim, so its
   * retry waits (without using attempts) until that run ends or its process stops: never two
   * runs at once. Env: `PAYMENT_QUEUE_JOB_TIMEOUT_MS`. @default 900000 (15 minutes)
   */
  queueJobTimeoutMs?: number | undefined;
  /**
   * Lock of a running event, renewed every half of it. A worker that died mid-handler has its
   * events taken over after 1 to 1.5 times this (or once its store lease lapsed, whichever is
   * later). Keep it above the longest event-loop stall you expect. Env: `PAYMENT_QUEUE_LOCK_DURATION_MS`. @default 30000
   */
  queueLockDurationMs?: number | undefined;
  /**
   * Times an event's worker may die (or be stopped before its handlers finished) and the event
   * still be taken over; one stall more makes it a dead letter. The store claim keeps every
   * take-over single. Env: `PAYMENT_QUEUE_MAX_STALLED_COUNT`. @default 2
   */
  queueMaxStalledCount?: number | undefined;
}

/** Options after env merge, defaults and validation: what every provider reads. @publicApi */
export interface ResolvedPaymentOptions {
  /** The merchant account these options belong to: `'default'` for `forRoot()` without `account`. */
  account: string;
  baseUrl: string;
  environment: PaymentEnvironment;
  /** `baseUrl` + `apiBasePath` (`/sandbox/api/v1` or `/api/v1` by default), without trailing slash. */
  apiBaseUrl: string;
  clientId?: string;
  clientSecret?: string;
  webhookSecrets: string[];
  webhookPath: string;
  webhookToleranceSeconds: number;
  webhookMaxBodyBytes: number;
  httpTimeoutMs: number;
  maxRetries: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  maxRetryAfterMs: number;
  endpoints: PaymentEndpoints;
  tokenRequest: PaymentTokenRequestOptions;
  tokenResponse: PaymentTokenResponseOptions;
  responseFields: PaymentResponseFields;
  rateLimits: PaymentRateLimits | false;
  redisUrl?: string;
  redisKeyPrefix: string;
  redisTimeoutMs: number;
  store?: WebhookEventStore;
  webhookLeaseMs: number;
  webhookRetentionMs: number;
  webhookShutdownTimeoutMs: number;
  memoryStoreMaxEntries: number;
  reconcile: boolean;
  processing: PaymentProcessingMode;
  /** `queueRedisUrl`, else `redisUrl`; always set in queue mode. */
  queueRedisUrl?: string;
  queueWorker: boolean;
  queueConcurrency: number;
  queueAttempts: number;
  queueBackoffMs: number;
  queueDeadLetterRetentionMs: number;
  queueShutdownTimeoutMs: number;
  queueJobTimeoutMs: number;
  queueLockDurationMs: number;
  queueMaxStalledCount: number;
}
