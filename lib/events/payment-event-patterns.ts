import { InvalidPaymentEventPatternError } from './payment-event.errors.js';
import { isKnownPaymentEventType, PAYMENT_EVENT_FAMILIES, type PaymentEventPattern } from './payment-event.types.js';

const FAMILY_WILDCARDS: ReadonlySet<string> = new Set(PAYMENT_EVENT_FAMILIES.map((family) => `${family}.*`));

/** True for an exact known type, a known family wildcard or `'*'`. */
function isPaymentEventPattern(value: unknown): value is PaymentEventPattern {
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
