/** Life of an order. Only webhook handlers (after reading the payment status) move it past AWAITING_PAYMENT. */
export type OrderStatus =
  | 'AWAITING_PAYMENT'
  | 'PAID'
  | 'PAYMENT_FAILED'
  | 'PAYMENT_CANCELLED'
  | 'PAYMENT_EXPIRED'
  | 'REFUND_PENDING'
  | 'REFUNDED';

export interface OrderItem {
  sku: string;
  quantity: number;
  /** Numeric string, e.g. '12.50'. */
  unitPrice: string;
}

export interface Order {
  id: string;
  items: OrderItem[];
  /** Numeric string with 8 decimals, as the service sends it. */
  amount: string;
  currency: string;
  status: OrderStatus;
  idempotencyKey: string;
  trxId: string | null;
  paymentToken: string | null;
  refundUid: string | null;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
  paidAt: string | null;
  /** How many times the order was fulfilled: 0 or 1, never more. */
  fulfilments: number;
}

/** One row of the application's audit of delivered events. */
export interface ProcessedEvent {
  eventId: string;
  eventType: string;
  orderId: string | null;
  reference: string | null;
  outcome: string;
  handledAt: string;
  /** Times the module handed this event to the app (more than 1 only after the module forgot it, e.g. a restart with the memory store). */
  timesSeen: number;
}
