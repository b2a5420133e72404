/**
 * Wire formats of the payment service. The spec (section 4) does not show request and
 * response payloads; these are the documented defaults of this package (README,
 * "Assumptions"). The client and the simulator both speak exactly this.
 */

/** Error envelope of spec section 7. */
export interface WireErrorEnvelope {
  status: 'error';
  code: string;
  message: string;
  errors: Record<string, string[]>;
  data: [];
}

/** Success envelope: the payload is in `data` (spec section 4). */
export interface WireSuccessEnvelope<T> {
  status: 'success';
  data: T;
  [extra: string]: unknown;
}

/** `POST /authentication/token` body (assumed). */
export interface WireTokenRequest {
  client_id: string;
  client_secret: string;
}

/** `POST /authentication/token` response `data` (assumed; the client also accepts `accessToken` or `token`). */
export interface WireTokenData {
  access_token?: string;
  accessToken?: string;
  token?: string;
  token_type?: string;
  /** seconds; when absent the client assumes 600 (spec 5.2). */
  expires_in?: number;
  [extra: string]: unknown;
}

/** `POST /payment/create` body (assumed field names; `idempotency_key` is named by the spec). */
export interface WireCreatePaymentRequest {
  amount: string;
  currency: string;
  idempotency_key: string;
  custom?: string;
  country?: string;
  gateway?: string;
  return_url?: string;
  cancel_url?: string;
  customer?: Record<string, unknown>;
  splits?: Array<{ subaccount_id: string; amount: string }>;
  [extra: string]: unknown;
}

/** Payment record as returned by create and status (field names of spec 2.2). */
export interface WirePaymentData {
  trxId: string;
  token: string;
  amount: string;
  currency: string;
  status: string;
  custom?: string;
  merchantId?: number;
  [extra: string]: unknown;
}

/** `POST /payment/{trx_id}/refund` body (assumed). */
export interface WireRefundRequest {
  amount?: string;
  reason?: string;
  [extra: string]: unknown;
}

export interface WireRefundData {
  refundUid: string;
  trxId?: string;
  amount?: string;
  status?: string;
  failureReason?: string;
  [extra: string]: unknown;
}

/** `POST /payout` body (assumed). */
export interface WirePayoutRequest {
  amount: string;
  currency: string;
  country?: string;
  recipient: Record<string, unknown>;
  reference?: string;
  [extra: string]: unknown;
}

export interface WirePayoutData {
  payoutUid: string;
  amount?: string;
  currency?: string;
  status?: string;
  failureReason?: string;
  [extra: string]: unknown;
}

export interface WireGateway {
  id?: string;
  name?: string;
  [extra: string]: unknown;
}
