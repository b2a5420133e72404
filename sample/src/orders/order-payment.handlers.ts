import { Inject, Injectable, Logger } from '@nestjs/common';
import { OnPaymentEvent, type PaymentEvent, PaymentGatewayService } from 'nestjs-payment-gateway';
import { sameAmount } from './money.js';
import type { Order, OrderStatus } from './order.types.js';
import { OrdersRepository } from './orders.repository.js';
import { nowIso } from './orders.service.js';

type PaymentEventType =
  | 'payment.created'
  | 'payment.pending'
  | 'payment.succeeded'
  | 'payment.failed'
  | 'payment.cancelled'
  | 'payment.expired';

/** Events that claim the payment is over: the service's status must agree before we act. */
const FINAL_EVENT: Partial<Record<PaymentEventType, OrderStatus>> = {
  'payment.succeeded': 'PAID',
  'payment.failed': 'PAYMENT_FAILED',
  'payment.cancelled': 'PAYMENT_CANCELLED',
  'payment.expired': 'PAYMENT_EXPIRED',
};

/**
 * The shop's reactions to payment events. The module has already verified the
 * signature and drops duplicates of an eventId it remembers; these handlers are
 * idempotent anyway (conditional updates in one SQLite transaction), because the module's
 * memory store forgets on restart and a portal re-trigger may come days later.
 *
 * Order state is decided by `GET /payment/status` (spec 6.2), never by which event
 * came last: a late `payment.pending` cannot undo a payment that is already `SUCCESS`.
 */
@Injectable()
export class OrderPaymentHandlers {
  private readonly logger = new Logger('OrderPayments');

  constructor(
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @Inject(PaymentGatewayService) private readonly payments: PaymentGatewayService,
  ) {}

  @OnPaymentEvent('payment.succeeded')
  async onSucceeded(event: PaymentEvent<'payment.succeeded'>): Promise<void> {
    await this.reconcile(event);
  }

  @OnPaymentEvent(['payment.failed', 'payment.cancelled', 'payment.expired'])
  async onEnded(event: PaymentEvent<'payment.failed' | 'payment.cancelled' | 'payment.expired'>): Promise<void> {
    await this.reconcile(event);
  }

  /** Informational events; they may arrive after the payment has settled, which must change nothing. */
  @OnPaymentEvent(['payment.created', 'payment.pending'])
  async onProgress(event: PaymentEvent<'payment.created' | 'payment.pending'>): Promise<void> {
    await this.reconcile(event);
  }

  @OnPaymentEvent('refund.succeeded')
  onRefundSucceeded(event: PaymentEvent<'refund.succeeded'>): void {
    const order = this.refundedOrder(event.data.refundUid, event.data.trxId);
    const now = nowIso();
    this.orders.transaction(() => {
      const changed = order ? this.orders.markRefunded(order.id, now) : false;
      const outcome = !order ? 'no matching order' : changed ? 'order REFUNDED' : `order is ${order.status}: no change`;
      this.audit(event, order?.id ?? null, event.data.refundUid, outcome, now);
    });
  }

  @OnPaymentEvent('refund.failed')
  onRefundFailed(event: PaymentEvent<'refund.failed'>): void {
    const order = this.refundedOrder(event.data.refundUid, event.data.trxId);
    const now = nowIso();
    const reason = event.data.failureReason ?? 'refund failed';
    this.orders.transaction(() => {
      const changed = order ? this.orders.markRefundFailed(order.id, `refund failed: ${reason}`, now) : false;
      const outcome = !order ? 'no matching order' : changed ? `refund failed (${reason}): order PAID again` : `order is ${order.status}: no change`;
      this.audit(event, order?.id ?? null, event.data.refundUid, outcome, now);
    });
    if (order) this.logger.warn(`Refund ${event.data.refundUid} of order ${order.id} failed: ${reason}`);
  }

  @OnPaymentEvent('payout.*')
  onPayout(event: PaymentEvent<'payout.created' | 'payout.succeeded' | 'payout.failed'>): void {
    const status = event.eventType === 'payout.succeeded' ? 'SUCCESS' : event.eventType === 'payout.failed' ? 'FAILED' : 'CREATED';
    const reason = event.eventType === 'payout.failed' ? (event.data.failureReason ?? null) : null;
    const now = nowIso();
    this.orders.transaction(() => {
      this.orders.upsertPayout(event.data.payoutUid, status, event.data.amount ?? null, event.data.currency ?? null, reason, now);
      this.audit(event, null, event.data.payoutUid, `payout ${status}${reason ? ` (${reason})` : ''}`, now);
    });
    if (status === 'FAILED') this.logger.warn(`Payout ${event.data.payoutUid} failed: ${reason ?? 'no reason given'}`);
  }

  private async reconcile(event: PaymentEvent<PaymentEventType>): Promise<void> {
    const { trxId, custom } = event.data;
    const order = (custom ? this.orders.find(custom) : undefined) ?? this.orders.findByTrxId(trxId);
    if (!order || (order.trxId !== null && order.trxId !== trxId)) {
      // Not a payment of this shop (or of another order): acknowledge, there is nothing to do.
      this.orders.transaction(() => this.audit(event, order?.id ?? null, trxId, 'no matching order: ignored', nowIso()));
      this.logger.warn(`${event.eventType} ${event.eventId} for ${trxId} matches no order`);
      return;
    }

    // Source of truth (spec 6.2). If this call fails, the handler throws, the module answers
    // non-2xx and the service delivers the event again later.
    const payment = await this.payments.getPaymentStatus(trxId);
    const final = FINAL_EVENT[event.eventType];
    const now = nowIso();
    let outcome: string;

    if (payment.status === 'SUCCESS') {
      // Only data.status of the status answer is published: when it carries no amount or
      // currency, the signed event's are used; with neither, nothing is guessed (the handler
      // throws and the service delivers the event again).
      const paidAmount = payment.amount ?? event.data.amount;
      const paidCurrency = payment.currency ?? event.data.currency;
      if (paidAmount === undefined || paidCurrency === undefined) {
        throw new Error(`${event.eventType} for ${trxId}: neither the status answer nor the event says the amount paid; retry later`);
      }
      if (!sameAmount(paidAmount, order.amount) || paidCurrency !== order.currency) {
        outcome = `NOT fulfilled: paid ${paidAmount} ${paidCurrency}, order is ${order.amount} ${order.currency}`;
        this.logger.error(`Order ${order.id}: ${outcome}`);
        this.orders.transaction(() => this.audit(event, order.id, trxId, outcome, now));
        return;
      }
      outcome = this.orders.transaction(() => {
        const fulfilled = this.orders.markPaidAndFulfil(order.id, trxId, event.eventId, now);
        const current = this.orders.find(order.id)!.status;
        const text = fulfilled ? 'status SUCCESS: order PAID and fulfilled' : `status SUCCESS: order already ${current}, nothing to do`;
        this.audit(event, order.id, trxId, text, now);
        return text;
      });
    } else if (payment.status === 'REJECTED' && final && final !== 'PAID') {
      // REJECTED covers failed, cancelled and expired; only the final event's type tells which,
      // so a created/pending event seeing REJECTED leaves the order to that event.
      const target = final;
      const reason = typeof payment.failureReason === 'string' ? payment.failureReason : event.eventType;
      outcome = this.orders.transaction(() => {
        const changed = this.orders.markPaymentEnded(order.id, target, trxId, reason, now);
        const current = this.orders.find(order.id)!.status;
        const text = changed ? `status REJECTED: order ${target}` : `status REJECTED: order is ${current}, no change`;
        this.audit(event, order.id, trxId, text, now);
        return text;
      });
    } else {
      if (final && payment.status !== 'REJECTED') {
        // The event says "over" but the service still says PENDING: do not guess, ask again later.
        throw new Error(`${event.eventType} for ${trxId} but the payment status is ${payment.status}; retry later`);
      }
      outcome = `status ${payment.status}: order stays ${this.orders.find(order.id)?.status ?? order.status}`;
      this.orders.transaction(() => this.audit(event, order.id, trxId, outcome, now));
    }
    this.logger.log(`${event.eventType} ${event.eventId} → order ${order.id}: ${outcome}`);
  }

  private refundedOrder(refundUid: string, trxId: string | undefined): Order | undefined {
    return this.orders.findByRefundUid(refundUid) ?? (trxId ? this.orders.findByTrxId(trxId) : undefined);
  }

  private audit(event: { eventId: string; eventType: string }, orderId: string | null, reference: string | null, outcome: string, now: string): void {
    this.orders.recordEvent({ eventId: event.eventId, eventType: event.eventType, orderId, reference, outcome, now });
  }
}
