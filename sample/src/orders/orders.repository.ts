import { Inject, Injectable } from '@nestjs/common';
import { ShopDatabase } from '../database/shop-database.js';
import type { Order, OrderItem, OrderStatus, ProcessedEvent } from './order.types.js';

interface OrderRow {
  id: string;
  items: string;
  amount: string;
  currency: string;
  status: OrderStatus;
  idempotency_key: string;
  trx_id: string | null;
  payment_token: string | null;
  refund_uid: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
  paid_at: string | null;
  fulfilments: number;
}

interface EventRow {
  event_id: string;
  event_type: string;
  order_id: string | null;
  reference: string | null;
  outcome: string;
  handled_at: string;
  times_seen: number;
}

const ORDER_COLUMNS = `o.*, (SELECT COUNT(*) FROM fulfilments f WHERE f.order_id = o.id) AS fulfilments`;

/** Every SQL statement of the shop. Methods are synchronous (better-sqlite3); callers group them in transactions. */
@Injectable()
export class OrdersRepository {
  constructor(@Inject(ShopDatabase) private readonly database: ShopDatabase) {}

  transaction<T>(fn: () => T): T {
    return this.database.transaction(fn);
  }

  insert(order: { id: string; items: OrderItem[]; amount: string; currency: string; idempotencyKey: string; now: string }): void {
    this.database.db
      .prepare(
        `INSERT INTO orders (id, items, amount, currency, status, idempotency_key, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'AWAITING_PAYMENT', ?, ?, ?)`,
      )
      .run(order.id, JSON.stringify(order.items), order.amount, order.currency, order.idempotencyKey, order.now, order.now);
  }

  find(id: string): Order | undefined {
    const row = this.database.db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders o WHERE o.id = ?`).get(id) as OrderRow | undefined;
    return row && toOrder(row);
  }

  findByTrxId(trxId: string): Order | undefined {
    const row = this.database.db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders o WHERE o.trx_id = ?`).get(trxId) as
      | OrderRow
      | undefined;
    return row && toOrder(row);
  }

  findByRefundUid(refundUid: string): Order | undefined {
    const row = this.database.db.prepare(`SELECT ${ORDER_COLUMNS} FROM orders o WHERE o.refund_uid = ?`).get(refundUid) as
      | OrderRow
      | undefined;
    return row && toOrder(row);
  }

  /** Links the payment; keeps a trxId a webhook may already have stored (events can beat the create answer). */
  attachPayment(id: string, trxId: string | null, token: string | null, now: string): void {
    this.database.db
      .prepare(
        `UPDATE orders SET trx_id = COALESCE(trx_id, ?), payment_token = COALESCE(payment_token, ?), updated_at = ? WHERE id = ?`,
      )
      .run(trxId, token, now, id);
  }

  /**
   * AWAITING_PAYMENT (or a failure state: a later SUCCESS status wins) → PAID, plus one
   * fulfilment row. Returns false when the order was already paid: the conditional
   * UPDATE is what makes a second call harmless.
   */
  markPaidAndFulfil(id: string, trxId: string, eventId: string, now: string): boolean {
    const changed = this.database.db
      .prepare(
        `UPDATE orders SET status = 'PAID', trx_id = COALESCE(trx_id, ?), paid_at = ?, failure_reason = NULL, updated_at = ?
         WHERE id = ? AND status IN ('AWAITING_PAYMENT', 'PAYMENT_FAILED', 'PAYMENT_CANCELLED', 'PAYMENT_EXPIRED')`,
      )
      .run(trxId, now, now, id).changes;
    if (changed !== 1) return false;
    this.database.db
      .prepare(`INSERT OR IGNORE INTO fulfilments (order_id, trx_id, event_id, fulfilled_at) VALUES (?, ?, ?, ?)`)
      .run(id, trxId, eventId, now);
    return true;
  }

  /** Only an order still waiting can fail; a paid one never goes back. */
  markPaymentEnded(id: string, status: OrderStatus, trxId: string, reason: string | null, now: string): boolean {
    return (
      this.database.db
        .prepare(
          `UPDATE orders SET status = ?, trx_id = COALESCE(trx_id, ?), failure_reason = ?, updated_at = ?
           WHERE id = ? AND status = 'AWAITING_PAYMENT'`,
        )
        .run(status, trxId, reason, now, id).changes === 1
    );
  }

  /** Claims the order for a refund before calling the service, so two requests cannot both send one. */
  claimForRefund(id: string, now: string): boolean {
    return (
      this.database.db
        .prepare(`UPDATE orders SET status = 'REFUND_PENDING', updated_at = ? WHERE id = ? AND status = 'PAID' AND refund_uid IS NULL`)
        .run(now, id).changes === 1
    );
  }

  setRefundUid(id: string, refundUid: string, now: string): void {
    this.database.db.prepare(`UPDATE orders SET refund_uid = ?, updated_at = ? WHERE id = ?`).run(refundUid, now, id);
  }

  /** The refund call failed before the service acted: the order is PAID again. */
  releaseRefundClaim(id: string, now: string): void {
    this.database.db
      .prepare(`UPDATE orders SET status = 'PAID', updated_at = ? WHERE id = ? AND status = 'REFUND_PENDING' AND refund_uid IS NULL`)
      .run(now, id);
  }

  markRefunded(id: string, now: string): boolean {
    return (
      this.database.db
        .prepare(`UPDATE orders SET status = 'REFUNDED', failure_reason = NULL, updated_at = ? WHERE id = ? AND status = 'REFUND_PENDING'`)
        .run(now, id).changes === 1
    );
  }

  markRefundFailed(id: string, reason: string | null, now: string): boolean {
    return (
      this.database.db
        .prepare(`UPDATE orders SET status = 'PAID', failure_reason = ?, updated_at = ? WHERE id = ? AND status = 'REFUND_PENDING'`)
        .run(reason, now, id).changes === 1
    );
  }

  upsertPayout(payoutUid: string, status: string, amount: string | null, currency: string | null, reason: string | null, now: string): void {
    this.database.db
      .prepare(
        `INSERT INTO payouts (payout_uid, status, amount, currency, failure_reason, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(payout_uid) DO UPDATE SET
           -- a late payout.created must not undo a final outcome
           status = CASE WHEN payouts.status IN ('SUCCESS', 'FAILED') THEN payouts.status ELSE excluded.status END,
           amount = COALESCE(excluded.amount, payouts.amount),
           currency = COALESCE(excluded.currency, payouts.currency),
           failure_reason = COALESCE(excluded.failure_reason, payouts.failure_reason),
           updated_at = excluded.updated_at`,
      )
      .run(payoutUid, status, amount, currency, reason, now);
  }

  /** Application-level audit of delivered events; a second sighting only bumps `times_seen`. Returns true the first time. */
  recordEvent(event: { eventId: string; eventType: string; orderId: string | null; reference: string | null; outcome: string; now: string }): boolean {
    const inserted = this.database.db
      .prepare(
        `INSERT INTO processed_events (event_id, event_type, order_id, reference, outcome, handled_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(event_id) DO NOTHING`,
      )
      .run(event.eventId, event.eventType, event.orderId, event.reference, event.outcome, event.now).changes;
    if (inserted === 1) return true;
    this.database.db.prepare(`UPDATE processed_events SET times_seen = times_seen + 1 WHERE event_id = ?`).run(event.eventId);
    return false;
  }

  eventsOf(orderId: string): ProcessedEvent[] {
    const rows = this.database.db
      .prepare(`SELECT * FROM processed_events WHERE order_id = ? ORDER BY handled_at, rowid`)
      .all(orderId) as EventRow[];
    return rows.map((r) => ({
      eventId: r.event_id,
      eventType: r.event_type,
      orderId: r.order_id,
      reference: r.reference,
      outcome: r.outcome,
      handledAt: r.handled_at,
      timesSeen: r.times_seen,
    }));
  }

  fulfilmentCount(orderId: string): number {
    const row = this.database.db.prepare(`SELECT COUNT(*) AS n FROM fulfilments WHERE order_id = ?`).get(orderId) as { n: number };
    return row.n;
  }
}

function toOrder(r: OrderRow): Order {
  return {
    id: r.id,
    items: JSON.parse(r.items) as OrderItem[],
    amount: r.amount,
    currency: r.currency,
    status: r.status,
    idempotencyKey: r.idempotency_key,
    trxId: r.trx_id,
    paymentToken: r.payment_token,
    refundUid: r.refund_uid,
    failureReason: r.failure_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    paidAt: r.paid_at,
    fulfilments: r.fulfilments,
  };
}
