// Public API of nestjs-payment-gateway. Everything a user imports is named here explicitly.

// module and configuration
export { PaymentModule } from './payment.module.js';
export { PAYMENT_EVENT_NAMESPACE, PAYMENT_MODULE_OPTIONS, PAYMENT_RESOLVED_OPTIONS } from './payment.constants.js';
export type {
  PaymentEndpoints,
  PaymentEnvironment,
  PaymentModuleAsyncOptions,
  PaymentModuleOptions,
  PaymentOptionsFactory,
  PaymentRateLimits,
  PaymentResponseFields,
  PaymentTokenResponseOptions,
  ResolvedPaymentOptions,
} from './config/payment-module-options.interface.js';
export { PAYMENT_ENV_VARIABLES } from './config/payment-env.js';
export { PaymentConfigurationError, resolvePaymentOptions } from './config/payment-options.validation.js';

// client
export { PaymentGatewayService } from './client/payment-gateway.service.js';
export {
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
export type {
  CreatePaymentInput,
  CreatePaymentOptions,
  CreatePaymentResult,
  CreatePayoutInput,
  PaymentAmount,
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
export type { PaymentApiErrorDetails, PaymentNetworkFailure } from './client/payment-api.errors.js';
export { PAYMENT_CLIENT_RUNTIME } from './client/payment-client.clock.js';
export type { PaymentClientRuntime, PaymentClock } from './client/payment-client.clock.js';

// webhooks
export {
  computeWebhookSignature,
  createWebhookSignatureHeader,
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  parseWebhookSignatureHeader,
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
} from './webhooks/webhook-signature.js';
export type {
  ParsedWebhookSignatureHeader,
  VerifyWebhookSignatureOptions,
  WebhookSignatureVerification,
} from './webhooks/webhook-signature.js';
export {
  PaymentWebhookError,
  PaymentWebhookErrorCode,
  RAW_BODY_FIX_MESSAGE,
  WebhookBodyTooLargeError,
  WebhookEventInFlightError,
  WebhookHandlerFailedError,
  WebhookIdempotencyKeyMissingError,
  WebhookInvalidEnvelopeError,
  WebhookInvalidJsonError,
  WebhookRawBodyMissingError,
  WebhookReconciliationFailedError,
  WebhookSecretNotConfiguredError,
  WebhookSignatureError,
  WebhookSignatureMalformedError,
  WebhookSignatureMismatchError,
  WebhookSignatureMissingError,
  WebhookStoreUnavailableResponseError,
  WebhookTimestampOutOfToleranceError,
  WebhookUnsupportedMediaTypeError,
} from './webhooks/payment-webhook.errors.js';
export type { PaymentWebhookErrorBody } from './webhooks/payment-webhook.errors.js';
export { parseWebhookEnvelope, parseWebhookJson, validateWebhookEnvelope } from './webhooks/payment-webhook-envelope.js';
export { DEFAULT_WEBHOOK_MAX_BODY_BYTES, PaymentWebhookSignatureGuard } from './webhooks/payment-webhook.guard.js';
export { PaymentWebhookEnvelopeGuard } from './webhooks/payment-webhook-envelope.guard.js';
export {
  PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS,
  PaymentWebhookIdempotencyInterceptor,
  WEBHOOK_IDEMPOTENCY_METADATA,
  WebhookIdempotencyKey,
} from './webhooks/payment-webhook-idempotency.interceptor.js';
export type { WebhookIdempotencyKeyFn, WebhookIdempotencyOptions } from './webhooks/payment-webhook-idempotency.interceptor.js';
export { PaymentWebhookExceptionFilter } from './webhooks/payment-webhook-exception.filter.js';
export { PaymentWebhookHttpException } from './webhooks/payment-webhook-http.exception.js';
export { getVerifiedPaymentWebhookEvent, PAYMENT_WEBHOOK_REQUEST_STATE } from './webhooks/payment-webhook.request.js';
export type { PaymentWebhookRequest, PaymentWebhookRequestState } from './webhooks/payment-webhook.request.js';
export type { PaymentWebhookAck, PaymentWebhookRoute } from './webhooks/payment-webhook.providers.js';

// events
export { OnPaymentEvent } from './events/on-payment-event.decorator.js';
export type { PaymentEventHandlerDecorator } from './events/on-payment-event.decorator.js';
export {
  PAYMENT_EVENT_TYPES,
  PAYMENT_EVENT_FAMILIES,
  isKnownPaymentEventType,
  isPaymentEventOfType,
  paymentEventFamilyOf,
} from './events/payment-event.types.js';
export type {
  AnyPaymentEvent,
  DisputeCreatedEventData,
  PaymentEvent,
  PaymentEventData,
  PaymentEventDataMap,
  PaymentEventDataOf,
  PaymentEventEnvelope,
  PaymentEventExtras,
  PaymentEventFamily,
  PaymentEventForPattern,
  PaymentEventPattern,
  PaymentEventType,
  PaymentEventTypesMatching,
  PaymentEventWildcard,
  PayoutEventData,
  PayoutFailedEventData,
  RefundEventData,
  RefundFailedEventData,
  SplitSettledEventData,
  SubaccountPayoutEventData,
  SubaccountPayoutFailedEventData,
  UnknownPaymentEvent,
} from './events/payment-event.types.js';
export {
  InvalidPaymentEventPatternError,
  PaymentEventHandlerError,
  PaymentEventReconciliationError,
} from './events/payment-event.errors.js';
export type { PaymentEventHandlerFailure } from './events/payment-event.errors.js';
export { PaymentEventDispatcher, paymentEventEmitterName } from './events/payment-event.dispatcher.js';
export { PaymentEventExplorer } from './events/payment-event.explorer.js';

// stores
export { WebhookEventStore } from './stores/webhook-event-store.interface.js';
export type { WebhookClaimResult } from './stores/webhook-event-store.interface.js';
export {
  DEFAULT_MEMORY_STORE_MAX_ENTRIES,
  MemoryWebhookEventStore,
} from './stores/memory-webhook-event.store.js';
export type { MemoryWebhookEventStoreOptions } from './stores/memory-webhook-event.store.js';
export { DEFAULT_REDIS_KEY_PREFIX, RedisWebhookEventStore } from './stores/redis-webhook-event.store.js';
export type { RedisClientLike, RedisWebhookEventStoreOptions } from './stores/redis-webhook-event.store.js';
export { RedisClientMissingError, WebhookStoreUnavailableError } from './stores/webhook-event-store.errors.js';
