import type {
  PaymentEndpoints,
  PaymentRateLimits,
  PaymentResponseFields,
  PaymentTokenRequestOptions,
  PaymentTokenResponseOptions,
} from './payment-module-options.interface.js';

/** Defaults of every option; each one that fills a gap of the service's documentation is in the README's assumptions table. */
export const PAYMENT_OPTION_DEFAULTS = {
  environment: 'sandbox',
  webhookPath: 'payments/webhook',
  webhookToleranceSeconds: 300, // the replay window receivers must enforce
  webhookMaxBodyBytes: 1024 * 1024, // the service publishes no body size limit
  httpTimeoutMs: 15_000,
  maxRetries: 3,
  retryBaseDelayMs: 200,
  retryMaxDelayMs: 30_000,
  // a 429's Retry-After is waited in full up to two rate-limit windows; longer fails at once
  maxRetryAfterMs: 120_000,
  // per Redis command on the module's connections, and the queue route's wait before a 503
  redisTimeoutMs: 2000,
  webhookLeaseMs: 60_000,
  // the service retries for 29 h 20 min and the portal can re-trigger later, so keep ids a week
  webhookRetentionMs: 7 * 24 * 60 * 60 * 1000,
  // on app.close(), like the queue worker's grace
  webhookShutdownTimeoutMs: 10_000,
  memoryStoreMaxEntries: 100_000,
  reconcile: false,
  processing: 'inline',
  queueWorker: true,
  queueConcurrency: 10,
  // queue mode: retries within seconds to minutes (1 s doubling, 10 attempts ≈ 8.5 min), not the service's hours
  queueAttempts: 10,
  queueBackoffMs: 1000,
  queueDeadLetterRetentionMs: 30 * 24 * 60 * 60 * 1000,
  queueShutdownTimeoutMs: 10_000,
  queueJobTimeoutMs: 15 * 60 * 1000,
  queueLockDurationMs: 30_000,
  // a worker crash or forced shutdown may hit one event twice before it becomes a dead letter
  queueMaxStalledCount: 2,
} as const;

/** The API's base path in each environment, after the base URL (the `apiBasePath` option replaces it). */
export const SANDBOX_BASE_PATH = '/sandbox/api/v1';
export const LIVE_BASE_PATH = '/api/v1';

export const DEFAULT_PAYMENT_ENDPOINTS: PaymentEndpoints = {
  token: '/authentication/token',
  createPayment: '/payment/create',
  paymentStatus: '/payment/status',
  paymentStatusParam: 'trx_id',
  gateways: '/payments/gateways',
  refund: '/payment/{trx_id}/refund',
  refundLookup: '/refund/{refund_uid}',
  payout: '/payout',
  payoutLookup: '/payout/{payout_uid}',
  subaccountPrefix: '/subaccount',
};

export const DEFAULT_TOKEN_REQUEST: PaymentTokenRequestOptions = {
  clientIdField: 'client_id',
  clientSecretField: 'client_secret',
  encoding: 'json',
};

export const DEFAULT_TOKEN_RESPONSE: PaymentTokenResponseOptions = {
  tokenFields: ['access_token', 'accessToken', 'token'],
  expiresInField: 'expires_in',
  defaultExpiresInSeconds: 600, // tokens live 10 minutes
  maxExpiresInSeconds: 600,
  refreshMarginSeconds: 60,
};

/** Field names of success answers: camelCase (as in webhook data), then snake_case (as in paths). */
export const DEFAULT_RESPONSE_FIELDS: PaymentResponseFields = {
  trxId: ['trxId', 'trx_id'],
  refundUid: ['refundUid', 'refund_uid'],
  payoutUid: ['payoutUid', 'payout_uid'],
  status: ['status'],
};

/** The service's per-minute limits. */
export const DEFAULT_RATE_LIMITS: PaymentRateLimits = {
  tokenPerMinute: 10,
  createPaymentPerMinute: 30,
  readsPerMinute: 60,
  moneyMovementPerMinute: 30,
};
