import {
  isKnownPaymentEventType,
  PAYMENT_EVENT_FAMILIES,
  type PaymentEventPattern,
} from './payment-event.types.js';
import { InvalidPaymentEventPatternError } from './payment-event.errors.js';

/** Reflect-metadata key stored on a handler method by `@OnPaymentEvent`. */
export const PAYMENT_EVENT_HANDLER_METADATA = 'payment-gateway:event-handler';

export interface PaymentEventHandlerMetadata {
  /** Every pattern given to the decorator(s) of one method, without repeats. */
  patterns: readonly PaymentEventPattern[];
}

const FAMILY_WILDCARDS: ReadonlySet<string> = new Set(PAYMENT_EVENT_FAMILIES.map((family) => `${family}.*`));

/** True for an exact known type, a known family wildcard or `'*'`. */
export function isPaymentEventPattern(value: unknown): value is PaymentEventPattern {
  return typeof value === 'string' && (value === '*' || FAMILY_WILDCARDS.has(value) || isKnownPaymentEventType(value));
}

/**
 * Checks patterns when the decorator runs (class definition time), so a typo in
 * plain JavaScript fails at start-up instead of silently never matching.
 */
export function assertPaymentEventPatterns(patterns: readonly unknown[]): asserts patterns is readonly PaymentEventPattern[] {
  if (patterns.length === 0) {
    throw new InvalidPaymentEventPatternError(undefined, 'at least one event type or wildcard is required');
  }
  for (const pattern of patterns) {
    if (!isPaymentEventPattern(pattern)) {
      throw new InvalidPaymentEventPatternError(pattern);
    }
  }
}

/** Metadata of a handler method, or `undefined` when it is not decorated. */
export function getPaymentEventHandlerMetadata(method: unknown): PaymentEventHandlerMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(PAYMENT_EVENT_HANDLER_METADATA, method) as PaymentEventHandlerMetadata | undefined;
}

/** Adds patterns to a method; stacking decorators merges them so the method still runs once per event. */
export function addPaymentEventHandlerMetadata(method: Function, patterns: readonly PaymentEventPattern[]): void {
  const existing = getPaymentEventHandlerMetadata(method)?.patterns ?? [];
  const merged = [...new Set([...existing, ...patterns])];
  const metadata: PaymentEventHandlerMetadata = { patterns: merged };
  Reflect.defineMetadata(PAYMENT_EVENT_HANDLER_METADATA, metadata, method);
}
