import { type AnyPaymentEvent, PAYMENT_EVENT_MODULE_FIELDS, type PaymentEventEnvelope } from './payment-event.types.js';

/*
 * The fields only the module sets on a received event (`account`, `canonicalStatus`,
 * `receivedAt`, `PAYMENT_EVENT_MODULE_FIELDS`): a signed body that carries them never passes
 * them on as its own. Used by the route, the envelope guard and the queue's jobs.
 */

/** Makes a parsed webhook body an event handlers may see: the module's fields removed if the body carried them, then set. */
export function prepareReceivedEvent(event: AnyPaymentEvent, account: string, receivedAt: Date = new Date()): AnyPaymentEvent {
  for (const field of PAYMENT_EVENT_MODULE_FIELDS) {
    if (field in event) delete (event as unknown as Record<string, unknown>)[field];
  }
  event.account = account;
  event.receivedAt = receivedAt;
  return event;
}

/** The body without the module's fields (itself when it has none: the usual case, no copy). */
export function withoutModuleFields(event: AnyPaymentEvent): PaymentEventEnvelope {
  if (!PAYMENT_EVENT_MODULE_FIELDS.some((field) => field in event)) return event;
  const copy: Record<string, unknown> = { ...event };
  for (const field of PAYMENT_EVENT_MODULE_FIELDS) delete copy[field];
  return copy as unknown as PaymentEventEnvelope;
}
