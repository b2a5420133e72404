import { formatAmount, parseAmount } from './simulator.amounts.js';
import type { SimulatorAuthHandler } from './simulator-auth.handler.js';
import type { SimulatorClock } from './simulator.clock.js';
import { SIMULATED_GATEWAYS } from './simulator.constants.js';
import { SimulatorHttpError } from './simulator.errors.js';
import type { SimulatorEventPublisher } from './simulator-event.publisher.js';
import {
  ownedBy,
  readJsonObject,
  requireAmount,
  success,
  throwIfInvalid,
  type FieldErrors,
  type SimulatorAnswer,
  type SimulatorRequest,
} from './simulator-request.js';
import type { SimulatorState } from './simulator.state.js';
import type { SimulatedRefund } from './simulator.types.js';

/**
 * `POST /payment/{trx_id}/refund` and `GET /refund/{refund_uid}`. Only `SUCCESS`
 * payments of a provider with API refunds can be refunded, up to what is left. A refund
 * that succeeds is paid out of the merchant's wallet, which may go below zero (the spec
 * does not say where refunds come from; a payout after it then finds less to draw on).
 */
export class SimulatorRefundsHandler {
  constructor(
    private readonly state: SimulatorState,
    private readonly clock: SimulatorClock,
    private readonly events: SimulatorEventPublisher,
    private readonly auth: SimulatorAuthHandler,
  ) {}

  create(req: SimulatorRequest, trxId: string): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'moneyMovementPerMinute');
    const body = readJsonObject(req);
    const p = ownedBy(this.state.payments.get(trxId), merchant.settings.merchantId, 'PAY_2001');
    if (p.status !== 'SUCCESS') throw new SimulatorHttpError('PAY_2004');
    // the script wins over a gateway the request named: `no-api-refund` promises PAY_2006
    if (p.outcome === 'no-api-refund' || !SIMULATED_GATEWAYS.find((g) => g.id === p.gateway)?.apiRefunds) throw new SimulatorHttpError('PAY_2006');
    const errors: FieldErrors = {};
    const remaining = parseAmount(p.amount)! - parseAmount(p.refundedAmount)!;
    // Without an amount the refund takes whatever is left.
    const amount = body.amount === undefined ? remaining : requireAmount(body.amount, 'amount', errors);
    if (body.reason !== undefined && typeof body.reason !== 'string') errors.reason = ['The reason field must be a string.'];
    if (amount !== undefined && amount > remaining) {
      errors.amount = [`The amount exceeds the refundable amount ${formatAmount(remaining)}.`];
    } else if (amount !== undefined && amount <= 0n) {
      errors.amount = ['Nothing left to refund.'];
    }
    throwIfInvalid(errors);
    const failureReason = this.state.scripts.takeRefundFailure();
    const failed = failureReason !== undefined;
    const refund: SimulatedRefund = {
      refundUid: this.state.newId('rfd'),
      trxId: p.trxId,
      amount: formatAmount(amount!),
      currency: p.currency,
      status: failed ? 'FAILED' : 'SUCCESS',
      ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
      ...(failed ? { failureReason } : {}),
      merchantId: p.merchantId,
      createdAt: this.clock.iso(),
    };
    this.state.refunds.set(refund.refundUid, refund);
    if (!failed) {
      p.refundedAmount = formatAmount(parseAmount(p.refundedAmount)! + amount!);
      this.state.merchant(p.merchantId).wallet -= amount!;
    }
    this.events.publish(p.merchantId, failed ? 'refund.failed' : 'refund.succeeded', { ...refund });
    return success(201, { ...refund });
  }

  lookup(req: SimulatorRequest, refundUid: string): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'moneyMovementPerMinute');
    return success(200, { ...ownedBy(this.state.refunds.get(refundUid), merchant.settings.merchantId, 'PAY_2005') });
  }
}
