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
  PaymentTokenResponseOptions,
  ResolvedPaymentOptions,
} from './config/payment-module-options.interface.js';
export { PAYMENT_ENV_VARIABLES } from './config/payment-env.js';
export { PaymentConfigurationError, resolvePaymentOptions } from './config/payment-options.validation.js';

// stores
export { WebhookEventStore } from './stores/webhook-event-store.interface.js';
export type { WebhookClaimResult } from './stores/webhook-event-store.interface.js';
// stores (STORES engineer; lead to tidy)
export {
  DEFAULT_MEMORY_STORE_MAX_ENTRIES,
  MemoryWebhookEventStore,
} from './stores/memory-webhook-event.store.js';
export type { MemoryWebhookEventStoreOptions } from './stores/memory-webhook-event.store.js';
export { DEFAULT_REDIS_KEY_PREFIX, RedisWebhookEventStore } from './stores/redis-webhook-event.store.js';
export type { RedisClientLike, RedisWebhookEventStoreOptions } from './stores/redis-webhook-event.store.js';
export { RedisClientMissingError, WebhookStoreUnavailableError } from './stores/webhook-event-store.errors.js';

// events (EVENTS engineer; lead to tidy)
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
