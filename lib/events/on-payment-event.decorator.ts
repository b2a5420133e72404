import type { PaymentEventForPattern, PaymentEventPattern } from './payment-event.types.js';
import { addPaymentEventHandlerMetadata, assertPaymentEventPatterns } from './payment-event-metadata.accessor.js';

/**
 * A method decorator that only fits methods able to take the event of `P`:
 * the parameter type is checked against `PaymentEventForPattern<P>`.
 */
export type PaymentEventHandlerDecorator<P extends PaymentEventPattern> = <
  H extends (event: PaymentEventForPattern<P>) => unknown,
>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<H>,
) => void;

/**
 * Runs the decorated provider method for every verified, first-time delivery of
 * the matching events. Accepts an event type (`'payment.succeeded'`), a family
 * wildcard (`'payment.*'`), `'*'` (every event, including types this version
 * does not know), or an array of them. The method receives the typed event;
 * a parameter type that cannot take it is a compile error.
 *
 * A handler that throws or rejects makes the delivery fail (non-2xx), so the
 * service sends the event again: make handlers idempotent.
 *
 * @example
 * ```ts
 * @OnPaymentEvent('payment.succeeded')
 * async fulfil(event: PaymentEvent<'payment.succeeded'>) { ... }
 * ```
 */
export function OnPaymentEvent<const P extends PaymentEventPattern>(
  patterns: P | readonly P[],
): PaymentEventHandlerDecorator<P> {
  const list: readonly unknown[] = Array.isArray(patterns) ? patterns : [patterns];
  assertPaymentEventPatterns(list);
  return (target, propertyKey, descriptor) => {
    if (typeof descriptor?.value !== 'function') {
      throw new TypeError(`@OnPaymentEvent can only decorate methods (got ${String(propertyKey)})`);
    }
    // Handlers are found on provider instances; a static method would silently never run.
    if (typeof target === 'function') {
      throw new TypeError(`@OnPaymentEvent cannot decorate static methods (got ${target.name}.${String(propertyKey)})`);
    }
    addPaymentEventHandlerMetadata(descriptor.value, list);
  };
}
