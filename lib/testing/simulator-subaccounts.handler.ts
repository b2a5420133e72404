import { formatAmount, parseAmount } from './simulator.amounts.js';
import type { SimulatorAuthHandler } from './simulator-auth.handler.js';
import type { SimulatorEventPublisher } from './simulator-event.publisher.js';
import { requireAmount, success, type FieldErrors, type SimulatorAnswer, type SimulatorRequest } from './simulator-request.js';
import type { MerchantRecord, SimulatorState } from './simulator.state.js';
import type { SimulatedPayment, SimulatedSubaccountPayout } from './simulator.types.js';

/** One allocation of a payment to a subaccount. */
export type SplitAllocation = SimulatedPayment['splits'][number];

/**
 * Subaccounts: `GET /subaccounts`, the `splits` of payment creation, and what happens
 * when a split payment settles (`split.settled`, then automatic subaccount payouts).
 */
export class SimulatorSubaccountsHandler {
  constructor(
    private readonly state: SimulatorState,
    private readonly events: SimulatorEventPublisher,
    private readonly auth: SimulatorAuthHandler,
  ) {}

  list(req: SimulatorRequest): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'moneyMovementPerMinute');
    return success(
      200,
      [...merchant.subaccounts.values()].map((s) => ({ subaccountId: s.subaccountId, balance: formatAmount(s.balance) })),
    );
  }

  /**
   * The `splits` field of a payment: each item names one of the merchant's subaccounts
   * and a positive amount, and together they do not exceed the payment `amount`.
   */
  parseSplits(merchant: MerchantRecord, raw: unknown, amount: bigint | undefined, errors: FieldErrors): SplitAllocation[] {
    if (raw === undefined) return [];
    if (!Array.isArray(raw)) {
      errors.splits = ['The splits field must be an array.'];
      return [];
    }
    const out: SplitAllocation[] = [];
    let total = 0n;
    raw.forEach((s: unknown, i) => {
      const item = (s && typeof s === 'object' ? s : {}) as Record<string, unknown>;
      if (typeof item.subaccount_id !== 'string' || !merchant.subaccounts.has(item.subaccount_id)) {
        errors[`splits.${i}.subaccount_id`] = ['The subaccount_id must name one of your subaccounts.'];
      }
      const units = requireAmount(item.amount, `splits.${i}.amount`, errors);
      if (units !== undefined && typeof item.subaccount_id === 'string') {
        total += units;
        out.push({ subaccountId: item.subaccount_id, amount: formatAmount(units) });
      }
    });
    if (amount !== undefined && total > amount) errors.splits = ['The split amounts exceed the payment amount.'];
    return out;
  }

  /**
   * Credits the splits of a payment that just succeeded (`split.settled`), then pays
   * each subaccount with automatic payouts out at once: `subaccount_payout.created`
   * followed by `.succeeded`, or `.failed` for a subaccount set to fail its payouts.
   */
  settleSplits(p: SimulatedPayment, merchant: MerchantRecord): void {
    if (p.splits.length === 0) return;
    for (const s of p.splits) merchant.subaccounts.get(s.subaccountId)!.balance += parseAmount(s.amount)!;
    this.events.publish(p.merchantId, 'split.settled', {
      trxId: p.trxId,
      merchantId: p.merchantId,
      currency: p.currency,
      splits: p.splits.map((s) => ({ subaccountId: s.subaccountId, amount: s.amount })),
    });
    for (const s of p.splits) {
      const sub = merchant.subaccounts.get(s.subaccountId)!;
      if (!sub.autoPayout) continue;
      const payout: SimulatedSubaccountPayout = {
        payoutUid: this.state.newId('sap'),
        subaccountId: s.subaccountId,
        trxId: p.trxId,
        amount: s.amount,
        currency: p.currency,
        status: 'PENDING',
        merchantId: p.merchantId,
      };
      this.state.subaccountPayouts.set(payout.payoutUid, payout);
      this.events.publish(p.merchantId, 'subaccount_payout.created', { ...payout });
      if (sub.failPayouts) {
        payout.status = 'FAILED';
        payout.failureReason = 'Subaccount destination rejected the transfer';
        this.events.publish(p.merchantId, 'subaccount_payout.failed', { ...payout });
      } else {
        payout.status = 'SUCCESS';
        sub.balance -= parseAmount(s.amount)!;
        this.events.publish(p.merchantId, 'subaccount_payout.succeeded', { ...payout });
      }
    }
  }
}
