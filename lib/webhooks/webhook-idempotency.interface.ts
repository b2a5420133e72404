import type { ExecutionContext } from '@nestjs/common';

/**
 * Returns the deduplication key of a request: a string, or a whole number (used as its digits);
 * `undefined`/empty → 400, any other value → 500 `WEBHOOK_ROUTE_MISCONFIGURED`. Derive it from data
 * the signature covers (the verified body), never from a header a replay could change.
 * `TRequest` types the request (`WebhookIdempotencyKey<{ body: { deliveryId?: string } }>(...)`);
 * untyped by default, as Nest's `@Req()`.
 * @publicApi
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type WebhookIdempotencyKeyFn<TRequest = any> = (
  request: TRequest,
  context: ExecutionContext,
) => string | number | undefined | null | Promise<string | number | undefined | null>;

/**
 * Settings of `PaymentWebhookIdempotencyInterceptor`, per module or per route. Numbers are whole
 * and within the module's bounds for the same settings; checked by the decorator and the
 * constructor (`PaymentConfigurationError`).
 * @publicApi
 */
export interface WebhookIdempotencyOptions {
  /** Key of the request. @default the `eventId` of the verified payment webhook event */
  key?: WebhookIdempotencyKeyFn | undefined;
  /** How long one delivery may hold the key; renewed while the handler runs. @default 60000 */
  leaseMs?: number | undefined;
  /** How long a processed key is remembered. @default 7 days */
  retentionMs?: number | undefined;
  /** Body answered (with the route's status) for a request already processed. @default { received: true, duplicate: true } */
  duplicateResponse?: ((request: any) => unknown) | undefined;
  /**
   * Attempts at recording completion before answering 2xx anyway (a retry would run the handler
   * again); the completion is then retried in the background, the claim still renewed, until the
   * store answers (for up to 15 minutes). @default 3
   */
  completeAttempts?: number | undefined;
  /**
   * While the handler runs, the claim is renewed every sixth of `leaseMs` (stores with
   * `extend`; renewals at most a third of the lease apart), so a slow handler is not run
   * again by a concurrent delivery. Renewal stops after this long, so a hung handler cannot
   * block its key for good. @default 900000 (15 minutes)
   */
  maxLeaseRenewalMs?: number | undefined;
  /**
   * On `app.close()`, how long handlers still running (their sender may have hung up) may take
   * to finish before the store closes. Read from the interceptor's own options, not per route.
   * @default the module's `webhookShutdownTimeoutMs` (10000)
   */
  shutdownTimeoutMs?: number | undefined;
}

/**
 * The module's defaults for the interceptor (`PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS`): the settings,
 * and the shortest retention the default account's signature check allows.
 */
export interface ModuleWebhookIdempotencyDefaults extends WebhookIdempotencyOptions {
  /**
   * Twice the signature tolerance: a copy of a signed delivery passes the signature guard that
   * long, so its key must be remembered at least that long or the copy runs the handler again.
   */
  minRetentionMs?: number;
}
