/**
 * Typed model of the service's webhook events: the envelope, the `data` of each event type
 * and the patterns handlers subscribe with.
 *
 * The service documents the `data` payload of payment events only; the payloads of
 * the other families carry the identifiers it names and stay open for
 * fields it does not show (index signatures), so a new field never breaks a
 * handler's type.
 */

/** Every event type the service sends, in the order the service documents them. @publicApi */
export const PAYMENT_EVENT_TYPES = [
  'payment.created',
  'payment.pending',
  'payment.succeeded',
  'payment.failed',
  'payment.cancelled',
  'payment.expired',
  'refund.succeeded',
  'refund.failed',
  'payout.created',
  'payout.succeeded',
  'payout.failed',
  'split.settled',
  'subaccount_payout.created',
  'subaccount_payout.succeeded',
  'subaccount_payout.failed',
  'dispute.created',
] as const;

/** One of the event types the service sends. @publicApi */
export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

type FamilyOf<T extends string> = T extends `${infer F}.${string}` ? F : never;

/** The part of an event type before the first dot: `payment`, `refund`, `payout`, ... */
export type PaymentEventFamily = FamilyOf<PaymentEventType>;

/** Every event family. */
export const PAYMENT_EVENT_FAMILIES: readonly PaymentEventFamily[] = [
  'payment',
  'refund',
  'payout',
  'split',
  'subaccount_payout',
  'dispute',
];

/** `'payment.*'`, `'refund.*'`, ...: every known type of one family. */
export type PaymentEventWildcard = `${PaymentEventFamily}.*`;

/** What `@OnPaymentEvent` accepts: an exact type, a family wildcard, or `'*'` (every event, unknown types included). @publicApi */
export type PaymentEventPattern = PaymentEventType | PaymentEventWildcard | '*';

/** The JSON body of every webhook delivery. @publicApi */
export interface PaymentEventEnvelope<TType extends string = string, TData = Record<string, unknown>> {
  /** Unique id of the event; the deduplication key. */
  eventId: string;
  eventType: TType;
  /**
   * `YYYY-MM-DD`. Delivered as received: absent when the delivery had none, or had a value that
   * is not a string (the event is dispatched all the same, and the module logs a warning).
   */
  apiVersion?: string;
  /** ISO 8601 UTC. Delivered as received, like `apiVersion` (absent when missing or not a string). */
  createdAt?: string;
  /**
   * `production` for live; the service does not document the other values. Absent when missing
   * or not a string, like `apiVersion`.
   */
  environment?: string;
  data: TData;
}

/** `data` of `payment.*` events. @publicApi */
export interface PaymentEventData {
  /** Transaction id, the `trx_id` of paths and lookups. */
  trxId: string;
  /** Payment session token. */
  token: string;
  /** Numeric string with 8 decimal places. Never parse money into a float. */
  amount: string;
  /** ISO 4217. */
  currency: string;
  /** Status as sent with the event. Events can arrive out of order: decide from `canonicalStatus` (reconciliation) or `GET /payment/status`. */
  status: string;
  /** Merchant free text echoed back (usually the order id). */
  custom?: string;
  merchantId?: number;
  [field: string]: unknown;
}

/** `data` of `refund.*` events. @publicApi */
export interface RefundEventData {
  refundUid: string;
  trxId?: string;
  amount?: string;
  status?: string;
  [field: string]: unknown;
}

/** `data` of `refund.failed`. @publicApi */
export interface RefundFailedEventData extends RefundEventData {
  failureReason?: string;
}

/** `data` of `payout.*` events. @publicApi */
export interface PayoutEventData {
  payoutUid: string;
  amount?: string;
  currency?: string;
  status?: string;
  [field: string]: unknown;
}

/** `data` of `payout.failed`. @publicApi */
export interface PayoutFailedEventData extends PayoutEventData {
  failureReason?: string;
}

/** `data` of `split.settled`: allocations of one payment credited to subaccounts. Fields beyond the payment id are not documented. @publicApi */
export interface SplitSettledEventData {
  trxId?: string;
  [field: string]: unknown;
}

/** `data` of `subaccount_payout.*`. Fields are not documented. @publicApi */
export interface SubaccountPayoutEventData {
  payoutUid?: string;
  trxId?: string;
  amount?: string;
  currency?: string;
  status?: string;
  [field: string]: unknown;
}

/** `data` of `subaccount_payout.failed`. @publicApi */
export interface SubaccountPayoutFailedEventData extends SubaccountPayoutEventData {
  failureReason?: string;
}

/** `data` of `dispute.created` (reserved by the service, not live): a dispute opened against a payment. @publicApi */
export interface DisputeCreatedEventData {
  trxId?: string;
  [field: string]: unknown;
}

/** `data` type of each documented event type (`PaymentEventDataMap['refund.failed']`). @publicApi */
export interface PaymentEventDataMap {
  'payment.created': PaymentEventData;
  'payment.pending': PaymentEventData;
  'payment.succeeded': PaymentEventData;
  'payment.failed': PaymentEventData;
  'payment.cancelled': PaymentEventData;
  'payment.expired': PaymentEventData;
  'refund.succeeded': RefundEventData;
  'refund.failed': RefundFailedEventData;
  'payout.created': PayoutEventData;
  'payout.succeeded': PayoutEventData;
  'payout.failed': PayoutFailedEventData;
  'split.settled': SplitSettledEventData;
  'subaccount_payout.created': SubaccountPayoutEventData;
  'subaccount_payout.succeeded': SubaccountPayoutEventData;
  'subaccount_payout.failed': SubaccountPayoutFailedEventData;
  'dispute.created': DisputeCreatedEventData;
}

/** `data` type of an event type; an unknown type gets an open record. */
export type PaymentEventDataOf<T extends string> = T extends PaymentEventType
  ? PaymentEventDataMap[T]
  : Record<string, unknown>;

/**
 * What the module sets on an envelope before handlers see it. Fields of these names that
 * arrive in the body are dropped first: only the module writes them.
 * @publicApi
 */
export interface PaymentEventExtras {
  /** The merchant account the delivery was received for: `'default'` for `forRoot()` without `account`. */
  account: string;
  /**
   * `data.status` of `GET /payment/status`, read just before dispatch when `reconcile` is
   * on (payment events only): the source of truth, since events can arrive out of order.
   */
  canonicalStatus?: string;
  /** When this process received the delivery. */
  receivedAt: Date;
}

/** Names of the fields the module sets; removed from a received body before dispatch. */
export const PAYMENT_EVENT_MODULE_FIELDS: readonly (keyof PaymentEventExtras)[] = ['account', 'canonicalStatus', 'receivedAt'];

/**
 * A delivered event whose `data` is typed by its `eventType`. A union of types
 * gives a union of events, so `switch (event.eventType)` narrows `data`. A pattern
 * gives what its handler receives: `PaymentEvent<'payment.*'>` is every payment event,
 * `PaymentEvent<'*'>` any event (`PaymentEventForPattern`). A type this version does not
 * know is an event with untyped `data`.
 * @publicApi
 */
export type PaymentEvent<T extends PaymentEventType | string = PaymentEventType> = T extends unknown
  ? T extends PaymentEventWildcard | '*'
    ? PaymentEventForPattern<T>
    : TypedPaymentEvent<T>
  : never;

/** The event of each type in `T` (a type, not a pattern): what `PaymentEvent` gives for types. */
type TypedPaymentEvent<T extends string> = T extends unknown ? PaymentEventEnvelope<T, PaymentEventDataOf<T>> & PaymentEventExtras : never;

/** An event whose type this version does not know (a future type). Reaches `'*'` handlers only. @publicApi */
export type UnknownPaymentEvent = PaymentEventEnvelope<string, Record<string, unknown>> & PaymentEventExtras;

/** Anything the dispatcher may deliver. @publicApi */
export type AnyPaymentEvent = PaymentEvent | UnknownPaymentEvent;

/** Known types a pattern selects. */
export type PaymentEventTypesMatching<P extends PaymentEventPattern> = P extends '*'
  ? PaymentEventType
  : P extends `${infer F}.*`
    ? Extract<PaymentEventType, `${F}.${string}`>
    : Extract<P, PaymentEventType>;

/** The event a handler of pattern(s) `P` receives. `'*'` also receives unknown types. @publicApi */
export type PaymentEventForPattern<P extends PaymentEventPattern> = [Extract<P, '*'>] extends [never]
  ? TypedPaymentEvent<PaymentEventTypesMatching<P>>
  : AnyPaymentEvent;

const KNOWN_TYPES: ReadonlySet<string> = new Set(PAYMENT_EVENT_TYPES);

/** True when `type` is one of the event types the service documents. @publicApi */
export function isKnownPaymentEventType(type: string): type is PaymentEventType {
  return KNOWN_TYPES.has(type);
}

/** Family of an event type (`'subaccount_payout.failed'` → `'subaccount_payout'`), or `undefined` without a dot. */
export function paymentEventFamilyOf(type: string): string | undefined {
  const dot = type.indexOf('.');
  return dot > 0 ? type.slice(0, dot) : undefined;
}

/**
 * Narrows an event (e.g. in a `'*'` handler) to one known type:
 * `if (isPaymentEventOfType(e, 'payment.succeeded')) e.data.trxId`.
 * @publicApi
 */
export function isPaymentEventOfType<T extends PaymentEventType>(
  event: AnyPaymentEvent,
  type: T | readonly T[],
): event is TypedPaymentEvent<T> {
  return typeof type === 'string' ? event.eventType === type : (type as readonly string[]).includes(event.eventType);
}
