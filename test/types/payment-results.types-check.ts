/**
 * Compile-time proof that the results of calls that move money say what a 2xx may lack:
 * the service acted, but its answer may name no id (README "Reading answers"). Checked by
 * `npm run typecheck`; each `@ts-expect-error` fails it if the line below starts compiling.
 */
import type {
  CreatePaymentResult,
  PaymentRecord,
  PaymentStatusResult,
  PayoutRecord,
  PayoutResult,
  RefundRecord,
  RefundResult,
} from '../../lib/client/payment-api.types.js';

type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const expectType = <T extends true>(_proof?: T): void => undefined;

// creations: the id may be missing from a 2xx, so the type makes the caller handle it
expectType<Equal<CreatePaymentResult['trxId'], string | undefined>>();
expectType<Equal<CreatePaymentResult['token'], string | undefined>>();
expectType<Equal<RefundResult['refundUid'], string | undefined>>();
expectType<Equal<PayoutResult['payoutUid'], string | undefined>>();

// lookups fall back to the id they asked for: always present
expectType<Equal<PaymentRecord['trxId'], string>>();
expectType<Equal<PaymentStatusResult['trxId'], string>>();
expectType<Equal<RefundRecord['refundUid'], string>>();
expectType<Equal<PayoutRecord['payoutUid'], string>>();

export function storeIds(payment: CreatePaymentResult, refund: RefundResult, payout: PayoutResult): string[] {
  // @ts-expect-error a created payment's id may be undefined
  const trxId: string = payment.trxId;
  // @ts-expect-error a refund's id may be undefined
  const refundUid: string = refund.refundUid;
  // @ts-expect-error a payout's id may be undefined
  const payoutUid: string = payout.payoutUid;
  // the fields every result keeps, typed or not
  const extra: unknown = payment['providerReference'];
  void extra;
  return [trxId, refundUid, payoutUid, payment.idempotencyKey];
}
