import type { ContextId } from '@nestjs/core';
import type { AnyPaymentEvent, PaymentEventPattern } from './payment-event.types.js';
import { isKnownPaymentEventType, paymentEventFamilyOf } from './payment-event.types.js';

/** One decorated method, ready to be called with an event. */
export interface PaymentEventHandler {
  /** `ClassName.methodName`, used in logs and in `PaymentEventHandlerError`. */
  name: string;
  patterns: readonly PaymentEventPattern[];
  /**
   * True when the method's provider is request-scoped, request-dependent or transient:
   * it is resolved per event, in a context id where the event is registered as REQUEST.
   * Omitted counts as true (the safe default); the explorer always sets it.
   */
  scoped?: boolean;
  /** Calls the method; may resolve a fresh instance first (request-scoped providers). */
  invoke(event: AnyPaymentEvent, context: PaymentEventInvocationContext): Promise<unknown>;
}

/** Per-dispatch state shared by the handlers of one event. */
export interface PaymentEventInvocationContext {
  /**
   * Context id of this dispatch: request-scoped providers are resolved in it,
   * so several handler methods of one provider share one instance per event.
   */
  contextId: ContextId;
}

/**
 * Handlers found by the explorer, indexed by pattern. A handler registered
 * under several matching patterns is returned once.
 */
export class PaymentEventHandlerRegistry {
  private readonly byPattern = new Map<string, PaymentEventHandler[]>();
  private readonly all: PaymentEventHandler[] = [];
  private readonly matched = new Map<string, readonly PaymentEventHandler[]>();

  add(handler: PaymentEventHandler): void {
    this.matched.clear();
    this.all.push(handler);
    for (const pattern of handler.patterns) {
      const list = this.byPattern.get(pattern) ?? [];
      list.push(handler);
      this.byPattern.set(pattern, list);
    }
  }

  /**
   * Handlers of one event type, in registration order: exact, then family
   * wildcard, then `'*'`. Types this version does not know reach `'*'` only,
   * since wildcard handlers are typed for the known types of their family.
   */
  match(eventType: string): readonly PaymentEventHandler[] {
    // Memoised per type: the registry is filled once at init, and this runs per event.
    const cached = this.matched.get(eventType);
    if (cached !== undefined) return cached;
    const keys = ['*'];
    if (isKnownPaymentEventType(eventType)) {
      keys.unshift(eventType, `${paymentEventFamilyOf(eventType)}.*`);
    }
    const found = new Set<PaymentEventHandler>();
    for (const key of keys) {
      for (const handler of this.byPattern.get(key) ?? []) found.add(handler);
    }
    const handlers: readonly PaymentEventHandler[] = Object.freeze([...found]);
    // Unknown types come from the wire: only known ones (bounded set) are remembered.
    if (isKnownPaymentEventType(eventType)) this.matched.set(eventType, handlers);
    return handlers;
  }

  /** Every registered handler. */
  list(): readonly PaymentEventHandler[] {
    return this.all;
  }

  get size(): number {
    return this.all.length;
  }

  clear(): void {
    this.matched.clear();
    this.byPattern.clear();
    this.all.length = 0;
  }
}
