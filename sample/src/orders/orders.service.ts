import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { PaymentApiError, PaymentGatewayService } from 'nestjs-payment-gateway';
import { fromUnits, isAmount, toUnits } from './money.js';
import type { Order, OrderItem, ProcessedEvent } from './order.types.js';
import { InvalidOrderError, OrderNotFoundError, OrderStateError, PaymentUnavailableError } from './orders.errors.js';
import { OrdersRepository } from './orders.repository.js';

export interface PlaceOrderInput {
  items?: unknown;
  amount?: unknown;
  currency?: unknown;
}

export interface PlacedOrder {
  order: Order;
  payment: {
    /** Null only when the service's 2xx named no id: the payment.* webhook (matched by `custom`) fills it in. */
    trxId: string | null;
    /** Session token the payer's front end uses to complete the payment (null when the answer carried none). */
    token: string | null;
    /** The service answered 202: confirmation comes later, by webhook. */
    pending: boolean;
  };
}

const CURRENCY_RE = /^[A-Z]{3}$/;

@Injectable()
export class OrdersService {
  private readonly logger = new Logger('Orders');

  constructor(
    @Inject(OrdersRepository) private readonly orders: OrdersRepository,
    @Inject(PaymentGatewayService) private readonly payments: PaymentGatewayService,
  ) {}

  /** Stores the order first, then opens its payment session (keyed by the order, so a retry never opens a second one). */
  async placeOrder(input: PlaceOrderInput): Promise<PlacedOrder> {
    const { items, amount, currency } = validateOrder(input);
    const id = `ord_${randomBytes(8).toString('hex')}`;
    this.orders.insert({ id, items, amount, currency, idempotencyKey: `order-${id}`, now: nowIso() });
    this.logger.log(`Order ${id} placed: ${amount} ${currency}`);
    return this.startPayment(this.mustFind(id));
  }

  /** Re-opens the payment call of an order whose first attempt failed: same idempotency key, so at most one payment. */
  async retryPayment(id: string): Promise<PlacedOrder> {
    const order = this.mustFind(id);
    if (order.status !== 'AWAITING_PAYMENT') throw new OrderStateError(`Order ${id} is ${order.status}`);
    return this.startPayment(order);
  }

  get(id: string): Order {
    return this.mustFind(id);
  }

  events(id: string): ProcessedEvent[] {
    this.mustFind(id);
    return this.orders.eventsOf(id);
  }

  /**
   * Full refund of a paid order. The order is claimed (PAID → REFUND_PENDING) before the
   * call, so two concurrent requests cannot both send a refund.
   */
  async refund(id: string, reason?: string): Promise<Order> {
    const order = this.mustFind(id);
    if (!order.trxId || !this.orders.claimForRefund(id, nowIso())) {
      throw new OrderStateError(`Order ${id} is ${order.status}; only a PAID order can be refunded`);
    }
    try {
      const refund = await this.payments.refundPayment(order.trxId, reason ? { reason } : {});
      // without an id in the answer the order stays REFUND_PENDING; the refund.* event finds it by trxId
      if (refund.refundUid !== undefined) this.orders.setRefundUid(id, refund.refundUid, nowIso());
      this.logger.log(`Refund ${refund.refundUid ?? '(id not in the answer)'} requested for order ${id}`);
    } catch (error) {
      // Release the claim only when the service surely did not act (mayHaveReachedService false):
      // it refused the refund with a 4xx, or the refund never reached it (connection refused,
      // refused before sending, given up at shutdown), in which case no refund.* event will ever
      // come to end the claim. After a time-out, a 5xx, or an answer below 400 that is not a
      // success (a redirect, an error body in a 2xx) the refund may exist: leave it for the
      // refund.* event or an operator.
      const refused = (status: number | undefined) => status !== undefined && status >= 400 && status < 500 && status !== 429;
      if (error instanceof PaymentApiError && !error.mayHaveReachedService && refused(error.httpStatus)) {
        this.orders.releaseRefundClaim(id, nowIso());
        throw new OrderStateError(`The payment service refused the refund (${error.code}): ${error.message}`);
      }
      if (error instanceof PaymentApiError && !error.mayHaveReachedService) {
        this.orders.releaseRefundClaim(id, nowIso());
        const why = error.httpStatus === undefined ? 'the request did not reach the payment service' : `the payment service turned it away (HTTP ${error.httpStatus})`;
        throw new PaymentUnavailableError(`Nothing was refunded: ${why}; the order is PAID again, retry later`, {
          paymentErrorCode: error.code,
        });
      }
      throw new PaymentUnavailableError('Refund outcome unknown; the order stays REFUND_PENDING until the service reports it', {
        paymentErrorCode: error instanceof PaymentApiError ? error.code : undefined,
      });
    }
    return this.mustFind(id);
  }

  private async startPayment(order: Order): Promise<PlacedOrder> {
    try {
      const payment = await this.payments.createPayment(
        { amount: order.amount, currency: order.currency, custom: order.id },
        { idempotencyKey: order.idempotencyKey },
      );
      this.orders.attachPayment(order.id, payment.trxId ?? null, payment.token ?? null, nowIso());
      // answer what is stored: a webhook may have linked the payment before this answer came
      const stored = this.mustFind(order.id);
      this.logger.log(`Order ${order.id}: payment ${stored.trxId ?? '(id not in the answer)'} opened${payment.pending ? ' (pending confirmation)' : ''}`);
      return { order: stored, payment: { trxId: stored.trxId, token: stored.paymentToken, pending: payment.pending } };
    } catch (error) {
      const code = error instanceof PaymentApiError ? error.code : 'UNKNOWN';
      this.logger.warn(`Order ${order.id}: payment could not be opened (${code}); POST /orders/${order.id}/payment retries it`);
      throw new PaymentUnavailableError('The payment could not be opened; retry with POST /orders/:id/payment', {
        orderId: order.id,
        paymentErrorCode: code,
      });
    }
  }

  private mustFind(id: string): Order {
    const order = this.orders.find(id);
    if (!order) throw new OrderNotFoundError(id);
    return order;
  }
}

export function nowIso(): string {
  return new Date().toISOString();
}

/** Items with exact prices, or a bare amount; the total is computed in integer units. */
function validateOrder(input: PlaceOrderInput): { items: OrderItem[]; amount: string; currency: string } {
  if (!input || typeof input !== 'object') throw new InvalidOrderError('Body must be a JSON object');
  const currency = input.currency;
  if (typeof currency !== 'string' || !CURRENCY_RE.test(currency)) {
    throw new InvalidOrderError('currency must be an ISO 4217 code such as "USD"');
  }
  let items: OrderItem[] = [];
  let total: bigint;
  if (input.items !== undefined) {
    if (!Array.isArray(input.items) || input.items.length === 0 || input.items.length > 100) {
      throw new InvalidOrderError('items must be a non-empty array (at most 100 lines)');
    }
    total = 0n;
    items = input.items.map((raw: unknown, i: number) => {
      const item = raw as Partial<OrderItem> | null;
      if (!item || typeof item.sku !== 'string' || item.sku.length === 0 || item.sku.length > 64) {
        throw new InvalidOrderError(`items[${i}].sku must be a non-empty string`);
      }
      if (!Number.isInteger(item.quantity) || (item.quantity as number) < 1 || (item.quantity as number) > 1000) {
        throw new InvalidOrderError(`items[${i}].quantity must be an integer from 1 to 1000`);
      }
      if (!isAmount(item.unitPrice)) throw new InvalidOrderError(`items[${i}].unitPrice must be a numeric string such as "12.50"`);
      total += toUnits(item.unitPrice) * BigInt(item.quantity as number);
      return { sku: item.sku, quantity: item.quantity as number, unitPrice: item.unitPrice };
    });
    if (input.amount !== undefined && !(isAmount(input.amount) && toUnits(input.amount) === total)) {
      throw new InvalidOrderError('amount does not equal the sum of the items');
    }
  } else {
    if (!isAmount(input.amount)) throw new InvalidOrderError('Give items, or amount as a numeric string such as "25.00"');
    total = toUnits(input.amount);
  }
  if (total <= 0n) throw new InvalidOrderError('The order total must be greater than zero');
  return { items, amount: fromUnits(total), currency };
}
