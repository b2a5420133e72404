import type { PaymentEventEnvelope } from '../events/payment-event.types.js';
import { buildEvent } from './event-builders.js';
import type { SimulatorClock } from './simulator.clock.js';
import type { SimulatorState } from './simulator.state.js';
import type { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';

/** The data field naming the resource of each event family, as the simulator's own events key it (`subaccount_payout:<payoutUid>`). */
const RESOURCE_ID_FIELDS: Readonly<Record<string, string>> = Object.freeze({
  payment: 'trxId',
  refund: 'refundUid',
  payout: 'payoutUid',
  split: 'trxId',
  subaccount_payout: 'payoutUid',
});

/**
 * The resource key of a merchant's event: `<merchantId>:<family>:<id>`, or `<merchantId>:<type>:` for a
 * family without a known id field or data without the id. A merchant's resources are its own: another
 * merchant's event with the same id releases none of its held events.
 */
function resourceKeyOf(merchantId: number, type: string, data: Record<string, unknown>): string {
  const family = type.split('.', 1)[0]!;
  // own keys only: a family named `constructor` is no resource
  const id = Object.hasOwn(RESOURCE_ID_FIELDS, family) ? data[RESOURCE_ID_FIELDS[family]!] : undefined;
  return id === undefined ? `${merchantId}:${type}:` : `${merchantId}:${family}:${String(id)}`;
}

/** Wraps event data in an envelope, records it, and hands it to webhook delivery. */
export class SimulatorEventPublisher {
  /** Every event emitted, delivered or not, in emission order. */
  readonly log: PaymentEventEnvelope[] = [];

  constructor(
    private readonly state: SimulatorState,
    private readonly clock: SimulatorClock,
    private readonly deliverer: SimulatorWebhookDeliverer,
  ) {}

  /**
   * The event is keyed by the payment, refund, payout, split or subaccount payout it is about (its
   * id in `data`): the out-of-order switch holds a resource's early events until its next one.
   */
  publish(merchantId: number, type: string, data: Record<string, unknown>): PaymentEventEnvelope {
    const merchant = this.state.merchant(merchantId);
    const envelope = buildEvent(type, data, {
      createdAt: this.clock.iso(),
      // Live events carry `production`, not `live`.
      environment: merchant.settings.mode === 'live' ? 'production' : 'sandbox',
    }) as PaymentEventEnvelope;
    this.log.push(envelope);
    this.deliverer.enqueue(envelope, merchantId, resourceKeyOf(merchantId, type, data));
    return envelope;
  }
}

/**
 * A copy of event data as the receiver gets it (through JSON): a payload value with `toJSON`
 * or a class instance is not structured-cloneable.
 */
export function asDelivered<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
