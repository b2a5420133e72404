import { SetMetadata } from '@nestjs/common';
import { WEBHOOK_IDEMPOTENCY_METADATA } from '../payment.constants.js';
import type { WebhookIdempotencyKeyFn, WebhookIdempotencyOptions } from './webhook-idempotency.interface.js';
import { assertWebhookIdempotencyOptions } from './webhook-idempotency.validation.js';

/**
 * Per-route settings of `PaymentWebhookIdempotencyInterceptor` on a route of your own:
 * `@WebhookIdempotencyKey((req) => req.body.deliveryId) @UseInterceptors(PaymentWebhookIdempotencyInterceptor)`.
 * Keys from here are stored apart from the service's event ids.
 * @throws PaymentConfigurationError when an option is out of range (checked here, when the class is defined)
 * @publicApi
 */
export const WebhookIdempotencyKey = <TRequest = any>(
  key: WebhookIdempotencyKeyFn<TRequest>,
  options: Omit<WebhookIdempotencyOptions, 'key'> = {},
): MethodDecorator & ClassDecorator => {
  const settings = { ...options, key: key as WebhookIdempotencyKeyFn };
  assertWebhookIdempotencyOptions(settings, '@WebhookIdempotencyKey()');
  return SetMetadata(WEBHOOK_IDEMPOTENCY_METADATA, settings);
};
