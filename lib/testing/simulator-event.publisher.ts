import type { PaymentEventEnvelope } from '../events/payment-event.types.js';
import { buildEvent } from './event-builders.js';
import type { SimulatorClock } from './simulator.clock.js';
import type { SimulatorState } from './simulator.state.js';
import type { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';

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
   * `resourceKey` names the payment, refund or payout the event is about; the
   * out-of-order switch holds a resource's early events until its next one.
   */
  publish(merchantId: number, type: string, data: Record<string, unknown>, resourceKey: string): PaymentEventEnvelope {
    const merchant = this.state.merchant(merchantId);
    const envelope = buildEvent(type, data, {
      createdAt: this.clock.iso(),
      // Live events carry `production`, not `live`.
      environment: merchant.settings.mode === 'live' ? 'production' : 'sandbox',
    }) as PaymentEventEnvelope;
    this.log.push(envelope);
    this.deliverer.enqueue(envelope, merchantId, resourceKey);
    return envelope;
  }
}
