import { HttpException } from '@nestjs/common';
import {
  PaymentWebhookError,
  type PaymentWebhookErrorBody,
  WebhookInternalError,
  WebhookStoreUnavailableResponseError,
} from './payment-webhook.errors.js';

/**
 * A `PaymentWebhookError` as a Nest `HttpException`, so the JSON body
 * `{ statusCode, code, message }` comes out right under any exception filter,
 * including Nest's built-in one on routes where the user reuses our guards.
 * @publicApi
 */
export class PaymentWebhookHttpException extends HttpException {
  constructor(readonly error: PaymentWebhookError) {
    super(error.toResponseBody(), error.httpStatus, { cause: error });
  }

  get code(): string {
    return this.error.code;
  }

  override getResponse(): PaymentWebhookErrorBody {
    return super.getResponse() as PaymentWebhookErrorBody;
  }
}

/**
 * What the route throws for `error`: the module's refusals as they are, anything else as a
 * 500 `WEBHOOK_INTERNAL_ERROR` whose cause it is.
 */
export function toWebhookHttpException(error: unknown): PaymentWebhookHttpException {
  if (error instanceof PaymentWebhookHttpException) return error;
  return new PaymentWebhookHttpException(error instanceof PaymentWebhookError ? error : new WebhookInternalError({ cause: error }));
}

/** 503 `WEBHOOK_STORE_UNAVAILABLE`: the store failed or did not answer in time (or the app is closing); nothing ran, the sender retries. */
export function storeUnavailable(cause: unknown): PaymentWebhookHttpException {
  return new PaymentWebhookHttpException(new WebhookStoreUnavailableResponseError({ cause }));
}
