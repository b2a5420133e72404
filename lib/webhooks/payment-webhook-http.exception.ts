import { HttpException } from '@nestjs/common';
import type { PaymentWebhookError, PaymentWebhookErrorBody } from './payment-webhook.errors.js';

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
