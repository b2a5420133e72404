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
