import { SetMetadata } from '@nestjs/common';
import { WEBHOOK_IDEMPOTENCY_METADATA } from '../payment.constants.js';
import type { WebhookIdempotencyKeyFn, WebhookIdempotencyOptions } from './webhook-idempotency.interface.js';

/**
 * Per-route settings of `PaymentWebhookIdempotencyInterceptor` on a route of your own:
 * `@WebhookIdempotencyKey((req) => req.body.deliveryId) @UseInterceptors(PaymentWebhookIdempotencyInterceptor)`.
 * Keys from here are stored apart from the service's event ids.
 * @publicApi
 */
export const WebhookIdempotencyKey = <TRequest = any>(
  key: WebhookIdempotencyKeyFn<TRequest>,
  options: Omit<WebhookIdempotencyOptions, 'key'> = {},
): MethodDecorator & ClassDecorator => SetMetadata(WEBHOOK_IDEMPOTENCY_METADATA, { ...options, key: key as WebhookIdempotencyKeyFn });
