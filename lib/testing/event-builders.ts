import { randomBytes } from 'node:crypto';
import type {
  PaymentEventDataMap,
  PaymentEventEnvelope,
  PaymentEventType,
} from '../events/payment-event.types.js';

/** `apiVersion` the simulator stamps on every envelope. @publicApi */
export const SIMULATOR_API_VERSION = '2025-01-01';

/** An envelope as the service documents it: a built event always has the fields a delivery may lack. @publicApi */
export type BuiltEvent<T extends string, D> = PaymentEventEnvelope<T, D> & Required<Pick<PaymentEventEnvelope, 'apiVersion' | 'createdAt' | 'environment'>>;

/** The envelope fields a builder's caller may set (`eventId`, `apiVersion`, `createdAt`, `environment`). @publicApi */
export type EventEnvelopeOverrides = Partial<Omit<PaymentEventEnvelope, 'data' | 'eventType'>>;

/** A fresh unique event id (`evt_` + 24 hex chars). @publicApi */
export function newEventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

/**
 * A webhook envelope around `data`: fresh `eventId`, `apiVersion`, `createdAt` now,
 * `environment: 'sandbox'` unless overridden (`'production'` is the live value).
 * @publicApi
 */
export function buildEvent<T extends PaymentEventType>(
  type: T,
  data: PaymentEventDataMap[T],
  envelopeOverrides?: EventEnvelopeOverrides,
): BuiltEvent<T, PaymentEventDataMap[T]>;
/** Any other shape, or a type this version does not know: `data` as given, not claimed to be typed. */
export function buildEvent<T extends string>(type: T, data: Record<string, unknown>, envelopeOverrides?: EventEnvelopeOverrides): BuiltEvent<T, Record<string, unknown>>;
export function buildEvent(type: string, data: object, envelopeOverrides: EventEnvelopeOverrides = {}): BuiltEvent<string, object> {
  return {
    eventId: envelopeOverrides.eventId ?? newEventId(),
    eventType: type,
    apiVersion: envelopeOverrides.apiVersion ?? SIMULATOR_API_VERSION,
    createdAt: envelopeOverrides.createdAt ?? new Date().toISOString(),
    environment: envelopeOverrides.environment ?? 'sandbox',
    data,
  };
}

const PAYMENT_STATUS_BY_TYPE: Record<string, string> = {
  'payment.created': 'PENDING',
  'payment.pending': 'PENDING',
  'payment.succeeded': 'SUCCESS',
  'payment.failed': 'REJECTED',
  'payment.cancelled': 'REJECTED',
  'payment.expired': 'REJECTED',
};

/** A valid `payment.*` envelope; `data` defaults to a 10.00000000 USD payment of merchant 1 with the status that fits the type. @publicApi */
export function buildPaymentEvent<T extends Extract<PaymentEventType, `payment.${string}`>>(
  type: T,
  dataOverrides: Partial<PaymentEventDataMap['payment.created']> = {},
  envelopeOverrides: EventEnvelopeOverrides = {},
): BuiltEvent<T, PaymentEventDataMap[T]> {
  const data = {
    trxId: `trx_${randomBytes(8).toString('hex')}`,
    token: `pst_${randomBytes(8).toString('hex')}`,
    amount: '10.00000000',
    currency: 'USD',
    status: PAYMENT_STATUS_BY_TYPE[type] ?? 'PENDING',
    custom: 'order-1',
    merchantId: 1,
    ...dataOverrides,
  };
  return buildEvent(type, data, envelopeOverrides) as BuiltEvent<T, PaymentEventDataMap[T]>;
}

/** A valid `refund.*` envelope (status `SUCCESS` or `FAILED` with a `failureReason`). @publicApi */
export function buildRefundEvent<T extends Extract<PaymentEventType, `refund.${string}`>>(
  type: T,
  dataOverrides: Partial<PaymentEventDataMap['refund.failed']> = {},
  envelopeOverrides: EventEnvelopeOverrides = {},
): BuiltEvent<T, PaymentEventDataMap[T]> {
  const failed = type === 'refund.failed';
  const data = {
    refundUid: `rfd_${randomBytes(8).toString('hex')}`,
    trxId: `trx_${randomBytes(8).toString('hex')}`,
    amount: '10.00000000',
    currency: 'USD',
    status: failed ? 'FAILED' : 'SUCCESS',
    merchantId: 1,
    ...(failed ? { failureReason: 'Provider declined the refund' } : {}),
    ...dataOverrides,
  };
  return buildEvent(type, data, envelopeOverrides) as BuiltEvent<T, PaymentEventDataMap[T]>;
}

const PAYOUT_STATUS_BY_TYPE: Record<string, string> = {
  'payout.created': 'PENDING',
  'payout.succeeded': 'SUCCESS',
  'payout.failed': 'FAILED',
};

/** A valid `payout.*` envelope. @publicApi */
export function buildPayoutEvent<T extends Extract<PaymentEventType, `payout.${string}`>>(
  type: T,
  dataOverrides: Partial<PaymentEventDataMap['payout.failed']> = {},
  envelopeOverrides: EventEnvelopeOverrides = {},
): BuiltEvent<T, PaymentEventDataMap[T]> {
  const failed = type === 'payout.failed';
  const data = {
    payoutUid: `pyo_${randomBytes(8).toString('hex')}`,
    amount: '10.00000000',
    currency: 'USD',
    status: PAYOUT_STATUS_BY_TYPE[type] ?? 'PENDING',
    merchantId: 1,
    ...(failed ? { failureReason: 'Recipient account closed' } : {}),
    ...dataOverrides,
  };
  return buildEvent(type, data, envelopeOverrides) as BuiltEvent<T, PaymentEventDataMap[T]>;
}
