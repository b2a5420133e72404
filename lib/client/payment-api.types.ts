/**
 * Public input and output types of `PaymentGatewayService` (camelCase). Outputs keep
 * every field the service returned, also the ones not typed here: the service does not
 * publish full payloads, so nothing is dropped.
 */

/** An amount as a numeric string (`'10.5'`, `'10.50000000'`) or a number. Sent as a string with 8 decimals. @publicApi */
export type PaymentAmount = string | number;

/** The payment statuses the service names; others may exist. @publicApi */
export type PaymentStatus = 'PENDING' | 'SUCCESS' | 'REJECTED' | (string & {});

/** @publicApi */
export interface PaymentSplitInput {
  subaccountId: string;
  amount: PaymentAmount;
}

/** @publicApi */
export interface CreatePaymentInput {
  amount: PaymentAmount;
  /** ISO 4217, e.g. `'USD'`. */
  currency: string;
  /** Free text echoed back in events; use it to find your order. */
  custom?: string | undefined;
  /** ISO 3166-1 alpha-2, e.g. `'BD'`. */
  country?: string | undefined;
  gateway?: string | undefined;
  returnUrl?: string | undefined;
  cancelUrl?: string | undefined;
  customer?: Record<string, unknown> | undefined;
  splits?: PaymentSplitInput[] | undefined;
  /** Additional wire fields sent as given (the service does not publish its payloads). */
  extra?: Record<string, unknown> | undefined;
}

/**
 * Per-call options of every `PaymentGatewayService` method.
 * @publicApi
 */
export interface PaymentCallOptions {
  /**
   * Gives the call up while it waits: for a rate-limit slot, a token, a backoff or a
   * `Retry-After`. It then rejects with `PaymentAbortedError` and sends nothing more. A request
   * already on the wire runs to its answer (cutting it would leave a refund or payout in doubt).
   */
  signal?: AbortSignal | undefined;
}

/** @publicApi */
export interface CreatePaymentOptions extends PaymentCallOptions {
  /** Same key → at most one payment. Generated (UUID) when absent; reused on the client's own retries. */
  idempotencyKey?: string;
}

/** The fields a payment record may carry besides its id and status. */
interface PaymentRecordFields {
  token?: string;
  amount?: string;
  currency?: string;
  custom?: string;
  merchantId?: number;
  [field: string]: unknown;
}

/** Payment record as the service returns it (the field names of payment events). @publicApi */
export interface PaymentRecord extends PaymentRecordFields {
  /** Read from `responseFields.trxId` (`trxId`, else `trx_id`). */
  trxId: string;
  status: PaymentStatus;
}

/**
 * A 2xx of a call that changes something (payment, refund, payout creation) always
 * resolves, and the result type says what may then be missing: when the answer names
 * no id under any field of `responseFields`, the id is `undefined` (a warning is logged)
 * and `raw` holds the whole answer. Keep `idempotencyKey`: retrying with it finds the
 * same payment.
 * @publicApi
 */
export interface CreatePaymentResult extends PaymentRecordFields {
  /** Read from `responseFields.trxId`; `undefined` only when the 2xx named no id (see above). */
  trxId: string | undefined;
  /** Present when the answer carried one (`responseFields.status`). */
  status?: PaymentStatus;
  /** True when the service answered 202: awaiting asynchronous provider confirmation. */
  pending: boolean;
  /** The key the payment was created with; keep it to retry safely. */
  idempotencyKey: string;
  httpStatus: number;
  /** The whole parsed answer, as received. */
  raw: unknown;
}

/** `getPaymentStatus` result: the canonical record and how the service answered. @publicApi */
export interface PaymentStatusResult extends PaymentRecord {
  /** True when the service answered 202 (still processing asynchronously). */
  pending: boolean;
  httpStatus: number;
  /** The whole parsed answer, as received. */
  raw: unknown;
}

/** @publicApi */
export interface PaymentGateway {
  id?: string;
  name?: string;
  [field: string]: unknown;
}

/** @publicApi */
export interface RefundPaymentInput {
  /** Partial refund amount; leave the field out to refund the whole payment (`undefined` and `null` are refused). */
  amount?: PaymentAmount;
  reason?: string | undefined;
  extra?: Record<string, unknown> | undefined;
}

/** The fields a refund record may carry besides its id. */
interface RefundRecordFields {
  trxId?: string;
  amount?: string;
  status?: string;
  failureReason?: string;
  [field: string]: unknown;
}

/** @publicApi */
export interface RefundRecord extends RefundRecordFields {
  /** Read from `responseFields.refundUid` (`refundUid`, else `refund_uid`). */
  refundUid: string;
}

/** @publicApi */
export interface RefundResult extends RefundRecordFields {
  /**
   * Read from `responseFields.refundUid`; `undefined` only when the 2xx named no id (a
   * warning is logged, `raw` holds the answer). The refund was accepted either way: do not send it again.
   */
  refundUid: string | undefined;
  httpStatus: number;
  /** The whole parsed answer, as received. */
  raw: unknown;
}

/** @publicApi */
export interface CreatePayoutInput {
  amount: PaymentAmount;
  currency: string;
  /** ISO 3166-1 alpha-2. */
  country?: string | undefined;
  /** Destination details; shape is provider-specific (not documented). */
  recipient: Record<string, unknown>;
  reference?: string | undefined;
  extra?: Record<string, unknown> | undefined;
}

/** The fields a payout record may carry besides its id. */
interface PayoutRecordFields {
  amount?: string;
  currency?: string;
  status?: string;
  failureReason?: string;
  [field: string]: unknown;
}

/** @publicApi */
export interface PayoutRecord extends PayoutRecordFields {
  /** Read from `responseFields.payoutUid` (`payoutUid`, else `payout_uid`). */
  payoutUid: string;
}

/** @publicApi */
export interface PayoutResult extends PayoutRecordFields {
  /**
   * Read from `responseFields.payoutUid`; `undefined` only when the 2xx named no id (a
   * warning is logged, `raw` holds the answer). The payout was accepted either way: do not send it again.
   */
  payoutUid: string | undefined;
  /** True when the service answered 202: the payout waits for approval. */
  pendingApproval: boolean;
  httpStatus: number;
  /** The whole parsed answer, as received. */
  raw: unknown;
}

/**
 * Which client-side limit a generic request counts against, which also picks
 * its token: `create-payment` gets a new token like `createPayment`.
 * @publicApi
 */
export type PaymentRequestScope = 'read' | 'create-payment' | 'money-movement' | 'none';

/** @publicApi */
export type PaymentHttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** @publicApi */
export interface PaymentRequestOptions {
  method: PaymentHttpMethod;
  /** Path under the API base (`/sandbox/api/v1` or `/api/v1`), e.g. `/subaccounts`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined> | undefined;
  /** JSON body. */
  body?: unknown;
  /**
   * Which client-side limit the call counts in. Subaccount operations share the limit of
   * refunds and payouts, so paths starting with `endpoints.subaccountPrefix`
   * (`/subaccount…`) count in it even for GET, as do GETs of `endpoints.refundLookup` and
   * `endpoints.payoutLookup` (the typed lookups count there).
   * @default 'money-movement' for subaccount paths, refund and payout lookups and non-GET requests, 'read' for other GETs
   */
  scope?: PaymentRequestScope | undefined;
  /**
   * Whether sending the request twice is harmless. GETs are; other methods are
   * retried only when the service surely did not act unless this is true.
   * @default true for GET, false otherwise
   */
  idempotent?: boolean | undefined;
  /** Send the bearer token. @default true */
  authenticated?: boolean | undefined;
  /** See `PaymentCallOptions.signal`. */
  signal?: AbortSignal | undefined;
}

/** @publicApi */
export interface PaymentResponse<T = unknown> {
  httpStatus: number;
  /** `data` of the success envelope. */
  data: T;
  /** The whole parsed body. */
  body: unknown;
}
