// Public API of nestjs-payment-gateway: exactly what the README's "API reference" lists
// (test/api/public-api.spec.ts fails when the two differ). Anything else is internal.

// module and configuration
export { PaymentModule } from './payment.module.js';
export type {
  PaymentModuleAsyncOptions,
  PaymentModuleExtras,
  PaymentModuleRootOptions,
  PaymentOptionsFactory,
} from './payment.module-definition.js';
export type {
  PaymentEndpoints,
  PaymentEnvironment,
  PaymentModuleOptions,
  PaymentProcessingMode,
  PaymentRateLimits,
  PaymentResponseFields,
  PaymentTokenRequestOptions,
  PaymentTokenResponseOptions,
  ResolvedPaymentOptions,
} from './config/payment-module-options.interface.js';
export { PAYMENT_ENV_VARIABLES } from './config/payment-env.js';
export { PaymentConfigurationError } from './config/payment-configuration.errors.js';
export { DEFAULT_PAYMENT_ACCOUNT, PAYMENT_CLIENT_RUNTIME } from './payment.constants.js';
export {
  getPaymentGatewayToken,
  getPaymentOptionsToken,
  getWebhookEventStoreToken,
  InjectPaymentGateway,
  InjectPaymentOptions,
} from './accounts/payment-account.tokens.js';

// client
export { PaymentGatewayService } from './client/payment-gateway.service.js';
export {
  PaymentAbortedError,
  PaymentApiError,
  PaymentAuthenticationError,
  PaymentClientConfigurationError,
  PaymentClientErrorCode,
  PaymentErrorCode,
  PaymentInvalidStateError,
  PaymentNetworkError,
  PaymentNotFoundError,
  PaymentPayoutError,
  PaymentProviderError,
  PaymentRateLimitError,
  PaymentServerError,
  PaymentValidationError,
} from './client/payment-api.errors.js';
export type { PaymentApiErrorDetails, PaymentNetworkFailure } from './client/payment-api.errors.js';
export type {
  CreatePaymentInput,
  CreatePaymentOptions,
  CreatePaymentResult,
  CreatePayoutInput,
  PaymentAmount,
  PaymentCallOptions,
  PaymentGateway,
  PaymentHttpMethod,
  PaymentRecord,
  PaymentRequestOptions,
  PaymentRequestScope,
  PaymentResponse,
  PaymentSplitInput,
  PaymentStatus,
  PaymentStatusResult,
  PayoutRecord,
  PayoutResult,
  RefundPaymentInput,
  RefundRecord,
  RefundResult,
} from './client/payment-api.types.js';
export type { PaymentClientRuntime, PaymentClock } from './client/payment-client.clock.js';

// webhooks
export { PaymentWebhookReceiver } from './webhooks/payment-webhook.receiver.js';
export type { PaymentWebhookAck } from './webhooks/payment-webhook.processor.js';
export type { PaymentWebhookRequest } from './webhooks/payment-webhook.request.js';
export {
  computeWebhookSignature,
  createWebhookSignatureHeader,
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
} from './webhooks/webhook-signature.js';
export type { VerifyWebhookSignatureOptions, WebhookSignatureVerification } from './webhooks/webhook-signature.js';
export { parseWebhookEnvelope, type WebhookEnvelopeAnomaly } from './webhooks/payment-webhook-envelope.js';
export {
  PaymentWebhookError,
  PaymentWebhookErrorCode,
  WebhookHandlerFailedError,
  WebhookSignatureError,
} from './webhooks/payment-webhook.errors.js';
export type { PaymentWebhookErrorBody } from './webhooks/payment-webhook.errors.js';
export { PaymentWebhookHttpException } from './webhooks/payment-webhook-http.exception.js';
export { PaymentWebhookExceptionFilter } from './webhooks/payment-webhook-exception.filter.js';
// building blocks for routes of the host's own
export { PaymentWebhookSignatureGuard } from './webhooks/payment-webhook-signature.guard.js';
export { PaymentWebhookEnvelopeGuard } from './webhooks/payment-webhook-envelope.guard.js';
export { PaymentWebhookIdempotencyInterceptor } from './webhooks/payment-webhook-idempotency.interceptor.js';
export { WebhookIdempotencyKey } from './webhooks/webhook-idempotency-key.decorator.js';
export type { WebhookIdempotencyKeyFn, WebhookIdempotencyOptions } from './webhooks/webhook-idempotency.interface.js';
export { getVerifiedPaymentWebhookEvent } from './webhooks/payment-webhook.request.js';

// events
export { OnPaymentEvent } from './events/on-payment-event.decorator.js';
export type { OnPaymentEventOptions, PaymentEventHandlerDecorator } from './events/on-payment-event.decorator.js';
export { PAYMENT_EVENT_TYPES, isKnownPaymentEventType, isPaymentEventOfType } from './events/payment-event.types.js';
export type {
  AnyPaymentEvent,
  DisputeCreatedEventData,
  PaymentEvent,
  PaymentEventData,
  PaymentEventDataMap,
  PaymentEventEnvelope,
  PaymentEventExtras,
  PaymentEventForPattern,
  PaymentEventPattern,
  PaymentEventType,
  PayoutEventData,
  PayoutFailedEventData,
  RefundEventData,
  RefundFailedEventData,
  SplitSettledEventData,
  SubaccountPayoutEventData,
  SubaccountPayoutFailedEventData,
  UnknownPaymentEvent,
} from './events/payment-event.types.js';
export { InvalidPaymentEventPatternError, PaymentEventHandlerError, PaymentEventReconciliationError } from './events/payment-event.errors.js';
export type { PaymentEventHandlerFailure } from './events/payment-event.errors.js';
export { paymentEventEmitterName } from './events/payment-event.dispatcher.js';

// stores
export { WebhookEventStore } from './stores/webhook-event-store.interface.js';
export type { WebhookClaimResult } from './stores/webhook-event-store.interface.js';
export { MemoryWebhookEventStore } from './stores/memory-webhook-event.store.js';
export type { MemoryWebhookEventStoreOptions } from './stores/memory-webhook-event.store.js';
export { RedisWebhookEventStore } from './stores/redis-webhook-event.store.js';
export type { RedisClientLike } from './stores/redis-client.js';
export type { RedisWebhookEventStoreOptions } from './stores/redis-webhook-event.store.js';
export { RedisClientMissingError, WebhookStoreUnavailableError } from './stores/webhook-event-store.errors.js';

// observability: OpenTelemetry names and the terminus-shaped health indicator
export { PAYMENT_TELEMETRY_SCOPE, PaymentMetricName, PaymentSpanAttribute } from './telemetry/payment-telemetry.names.js';
export type { PaymentClientOperation, PaymentClientOutcome, PaymentQueueJobOutcome, PaymentWebhookOutcome } from './telemetry/payment-telemetry.names.js';
export { PaymentHealthIndicator } from './health/payment-health.indicator.js';
export type {
  PaymentHealthCheckOptions,
  PaymentHealthComponentState,
  PaymentHealthIndicatorResult,
  PaymentHealthStatus,
} from './health/payment-health.interface.js';

// queue mode
export { PaymentDeadLetterService } from './queue/payment-dead-letter.service.js';
export { PAYMENT_DEAD_LETTER_EVENT } from './payment.constants.js';
export type { PaymentDeadLetter, PaymentDeadLetterListOptions } from './queue/payment-dead-letter.interface.js';
export { BullMqMissingError, PaymentDeadLetterBusyError, PaymentQueueUnavailableError } from './queue/payment-queue.errors.js';
