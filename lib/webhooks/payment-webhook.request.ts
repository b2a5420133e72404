import type { IncomingHttpHeaders } from 'node:http';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import type { WebhookSignatureVerification } from './webhook-signature.js';

/**
 * What the webhook guards need from a request. Express and Fastify requests both fit:
 * Nest sets `rawBody` on either when the app is created with `{ rawBody: true }`.
 */
export interface PaymentWebhookRequest {
  headers: IncomingHttpHeaders;
  rawBody?: Buffer;
  body?: unknown;
  [PAYMENT_WEBHOOK_REQUEST_STATE]?: PaymentWebhookRequestState;
}

/** What the guards learned, kept on the request for the interceptor and the handler. */
export interface PaymentWebhookRequestState {
  /** The bytes the signature was verified over. */
  rawBody?: Buffer;
  verification?: WebhookSignatureVerification;
  event?: AnyPaymentEvent;
}

/** Symbol key, so the state never collides with the host's request decorations. */
export const PAYMENT_WEBHOOK_REQUEST_STATE: unique symbol = Symbol.for('nestjs-payment-gateway.webhook-request');

export function getPaymentWebhookState(request: PaymentWebhookRequest): PaymentWebhookRequestState {
  return (request[PAYMENT_WEBHOOK_REQUEST_STATE] ??= {});
}

/** The verified, validated event of a request that passed both webhook guards, else `undefined`. */
export function getVerifiedPaymentWebhookEvent(request: PaymentWebhookRequest): AnyPaymentEvent | undefined {
  return request[PAYMENT_WEBHOOK_REQUEST_STATE]?.event;
}

/** First value of a header (Node joins most repeated headers, but some arrive as arrays). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
