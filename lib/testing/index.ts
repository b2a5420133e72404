// Public surface of `nestjs-payment-gateway/testing`.
export { PaymentServiceSimulator } from './payment-service.simulator.js';
export { SIMULATED_GATEWAYS, SIMULATOR_TOKEN_TTL_MS } from './simulator.constants.js';
export { signWebhookPayload, type SignWebhookPayloadOptions } from './webhook-signing.js';
export {
  buildEvent,
  buildPaymentEvent,
  buildPayoutEvent,
  buildRefundEvent,
  type BuiltEvent,
  type EventEnvelopeOverrides,
  newEventId,
  SIMULATOR_API_VERSION,
} from './event-builders.js';
export { SIMULATOR_ERROR_TABLE } from './simulator.errors.js';
export { SPEC_RATE_LIMITS, type SimulatorRateLimits } from './simulator-rate-limiter.js';
export { SPEC_MAX_ATTEMPTS, SPEC_RETRY_DELAYS_MS } from './simulator-webhook.deliverer.js';
export {
  PAYMENT_OUTCOMES,
  type FaultKind,
  type PaymentOutcome,
  type PaymentServiceSimulatorOptions,
  type SimulatedMerchant,
  type SimulatedMerchantSettings,
  type SimulatedMode,
  type SimulatedPayment,
  type SimulatedPayout,
  type SimulatedRefund,
  type SimulatedSubaccount,
  type SimulatedSubaccountPayout,
  type SimulatorAnswerBody,
  type SimulatorDeliveryFaults,
  type SimulatorDeliveryRecord,
  type SimulatorDeliveryState,
  type SimulatorFault,
  type SimulatorRequestRecord,
  type SimulatorRewrite,
  type SimulatorRewrittenAnswer,
} from './simulator.types.js';
