import type { ContextId } from '@nestjs/core';
import type { AnyPaymentEvent, PaymentEventPattern } from './payment-event.types.js';

/** What one `@OnPaymentEvent(...)` put on a method: the patterns, and the account it is bound to. */
export interface PaymentEventBinding {
  patterns: readonly PaymentEventPattern[];
  /** Only this account's events; `undefined` = every account's. */
  account?: string;
}

/** Metadata of a handler method: one binding per `@OnPaymentEvent` on it. */
export interface PaymentEventHandlerMetadata {
  bindings: readonly PaymentEventBinding[];
}

/** Per-dispatch state shared by the handlers of one event. */
export interface PaymentEventInvocationContext {
  /**
   * Context id of this dispatch: request-scoped providers are resolved in it,
   * so several handler methods of one provider share one instance per event.
   */
  contextId: ContextId;
}

/** One decorated method, ready to be called with an event. */
export interface PaymentEventHandler {
  /** `ClassName.methodName`, used in logs and in `PaymentEventHandlerError`. */
  name: string;
  bindings: readonly PaymentEventBinding[];
  /**
   * True when the method's provider is request-scoped, request-dependent or transient:
   * it is resolved per event, in a context id where the event is registered as REQUEST.
   */
  scoped: boolean;
  /**
   * Calls the method. Returns what it returned, or a promise when it returned a promise or an
   * observable (run to its end); may throw synchronously. Synchronous handlers cost no promise.
   */
  invoke(event: AnyPaymentEvent, context: PaymentEventInvocationContext): unknown;
}
