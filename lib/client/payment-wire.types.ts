/**
 * Wire formats of the payment service's request bodies and error envelope. The service
 * does not publish its payloads; these are the documented defaults of this package
 * (README, "Assumptions"). Response records are typed where they are read: the client's
 * `payment-api.types.ts` and the events' `payment-event.types.ts`.
 */

/** The service's error envelope: `{ status: 'error', code, message, errors, data: [] }`. */
export interface WireErrorEnvelope {
  status: 'error';
  code: string;
  message: string;
  errors: Record<string, string[]>;
  data: [];
}

/** `POST /payment/create` body (assumed field names; `idempotency_key` is the documented one). */
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

/** `POST /payment/{trx_id}/refund` body (assumed). */
export interface WireRefundRequest {
  amount?: string;
  reason?: string;
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
