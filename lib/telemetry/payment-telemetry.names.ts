import { isKnownPaymentEventType } from '../events/payment-event.types.js';
/**
 * Name of the OpenTelemetry meter and tracer of this package (the instrumentation scope;
 * Prometheus shows it as `otel_scope_name`).
 * @publicApi
 */
export const PAYMENT_TELEMETRY_SCOPE = 'nestjs-payment-gateway';

/**
 * Names of the package's OpenTelemetry instruments. Durations and waits are histograms in
 * seconds; counters count deliveries, logical calls or retries.
 * @publicApi
 */
export const PaymentMetricName = {
  /** Counter: webhook deliveries answered, by `outcome`, `code`, `event_type`, `account`. */
  WEBHOOK_REQUESTS: 'payment_gateway.webhook.requests',
  /** Histogram (s): from the delivery reaching the module to its answer; same attributes. */
  WEBHOOK_DURATION: 'payment_gateway.webhook.duration',
  /** Counter: logical calls to the service (retries included in one call), by `operation`, `outcome`, `code`, `http_status`, `account`. */
  CLIENT_REQUESTS: 'payment_gateway.client.requests',
  /** Histogram (s): one logical call, every attempt, wait and backoff included; same attributes. */
  CLIENT_DURATION: 'payment_gateway.client.duration',
  /** Counter: attempts repeated after a failure (token renewal included), by `operation`, `code`, `account`. */
  CLIENT_RETRIES: 'payment_gateway.client.retries',
  /** Histogram (s): wait for a client-side rate-limit slot, one value per attempt, by `operation`, `account`. */
  CLIENT_RATE_LIMIT_WAIT: 'payment_gateway.client.rate_limit_wait',
  /** Counter (queue mode): attempts of event jobs run by this process's worker, by `outcome`, `event_type`, `account`. */
  QUEUE_JOBS: 'payment_gateway.queue.jobs',
  /** Histogram (s, queue mode): one attempt of an event job (claim, handlers, completion); same attributes. */
  QUEUE_DURATION: 'payment_gateway.queue.duration',
  /** Counter (queue mode): events that failed their last attempt and became dead letters, by `event_type`, `account`. */
  QUEUE_DEAD_LETTERS: 'payment_gateway.queue.dead_letters',
} as const;

/** @publicApi */
export type PaymentMetricName = (typeof PaymentMetricName)[keyof typeof PaymentMetricName];

/**
 * How a webhook delivery was answered (`outcome` attribute):
 * - `handled`: 200, the handlers ran and succeeded;
 * - `duplicate`: 200, the event had been handled before (handlers not run);
 * - `rejected`: 4xx (or 500 for a module misconfiguration) before the event was trusted: content type,
 *   size, signature, replay window, envelope;
 * - `in_flight`: 409, another delivery of the event is being handled;
 * - `failed`: 500, a handler failed (the event runs again on redelivery);
 * - `unavailable`: 503, the event store or the reconciliation call could not be reached;
 * - `queued`: 2xx, the event was queued for later handling (queue mode only);
 * - `ignored`: 2xx, the event was signed for the other environment (a sandbox event on a live
 *   account, or the reverse) and was not dispatched.
 * @publicApi
 */
export type PaymentWebhookOutcome =
  | 'handled'
  | 'duplicate'
  | 'rejected'
  | 'in_flight'
  | 'failed'
  | 'unavailable'
  | 'queued'
  | 'ignored';

/**
 * How one attempt of an event job ended in a worker (`outcome` attribute, queue mode):
 * - `handled`: the handlers ran and succeeded;
 * - `duplicate`: the event had been handled before (handlers not run);
 * - `failed`: a handler or the reconciliation read failed, or the handlers outlived
 *   `queueJobTimeoutMs` (retried with backoff, or a dead letter after the last attempt);
 * - `in_flight`: another run of the event still holds it; the job waits without using an attempt;
 * - `unavailable`: the event store failed or did not answer the claim (nothing ran); the job waits
 *   without using an attempt.
 * @publicApi
 */
export type PaymentQueueJobOutcome = 'handled' | 'duplicate' | 'failed' | 'in_flight' | 'unavailable';

/**
 * The client operation of a call (`operation` attribute): one per `PaymentGatewayService`
 * method, `request` for `request()`, `token` for the access-token call the client makes itself.
 * @publicApi
 */
export type PaymentClientOperation =
  | 'create_payment'
  | 'get_payment_status'
  | 'list_gateways'
  | 'refund_payment'
  | 'get_refund'
  | 'create_payout'
  | 'get_payout'
  | 'request'
  | 'token';

/** `outcome` of a client call: `ok` for a 2xx answer, `error` for anything thrown. @publicApi */
export type PaymentClientOutcome = 'ok' | 'error';

/**
 * Attribute keys of the package's spans. Metrics use the short keys of their tables
 * (`outcome`, `code`, `event_type`, `account`, ...); spans carry these namespaced ones, next to
 * the standard `http.request.method` and `http.response.status_code`. Values are ids, types,
 * codes and counts only: never a secret, token, signature or other payload field.
 * @publicApi
 */
export const PaymentSpanAttribute = {
  ACCOUNT: 'payment_gateway.account',
  EVENT_ID: 'payment_gateway.event_id',
  EVENT_TYPE: 'payment_gateway.event_type',
  OUTCOME: 'payment_gateway.outcome',
  CODE: 'payment_gateway.code',
  HANDLER: 'payment_gateway.handler',
  OPERATION: 'payment_gateway.operation',
  RETRIES: 'payment_gateway.retries',
  /** On a `retry` span event: the wait before the repeated attempt, in ms. */
  RETRY_DELAY_MS: 'payment_gateway.retry.delay_ms',
  /** On a `retry` span event: which repeat it is (1 for the first). */
  RETRY_NUMBER: 'payment_gateway.retry.number',
  /** Queue mode: the attempt of an event job (1 for the first). */
  ATTEMPT: 'payment_gateway.attempt',
} as const;

/**
 * Metric values and span names stay few: a type the package does not know (new, or unusual)
 * is `unknown` there; span attributes keep the verified type as it came.
 */
export function metricEventType(eventType: string): string {
  return isKnownPaymentEventType(eventType) ? eventType : 'unknown';
}
