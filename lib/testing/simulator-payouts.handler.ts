import { assertText } from './simulator-options.validation.js';
import { formatAmount, parseAmount } from './simulator.amounts.js';
import type { SimulatorAuthHandler } from './simulator-auth.handler.js';
import type { SimulatorClock } from './simulator.clock.js';
import { SimulatorHttpError } from './simulator.errors.js';
import type { SimulatorEventPublisher } from './simulator-event.publisher.js';
import {
  checkCountry,
  checkCurrency,
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
import type { SimulatedPayout } from './simulator.types.js';

/** A payout recipient needs at least one of these to be reachable. */
const RECIPIENT_DESTINATIONS = ['account_number', 'iban', 'phone', 'email', 'wallet_id', 'mobile_number'];

/**
 * `POST /payout` and `GET /payout/{payout_uid}`. A payout takes its amount from the
 * wallet at once and gives it back if it fails. Without approval it settles right
 * after the answer; with approval it waits for `approve()` / `reject()`.
 */
export class SimulatorPayoutsHandler {
  /** Scripted failures taken by payouts waiting for approval: they fail when approved. */
  private readonly failOnApproval = new Map<string, string>();

  constructor(
    private readonly state: SimulatorState,
    private readonly clock: SimulatorClock,
    private readonly events: SimulatorEventPublisher,
    private readonly auth: SimulatorAuthHandler,
  ) {}

  create(req: SimulatorRequest): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'moneyMovementPerMinute');
    const body = readJsonObject(req);
    const errors: FieldErrors = {};
    const amount = requireAmount(body.amount, 'amount', errors);
    checkCurrency(body, errors);
    checkCountry(body, errors);
    if (body.reference !== undefined && typeof body.reference !== 'string') errors.reference = ['The reference field must be a string.'];
    throwIfInvalid(errors);
    const recipient = body.recipient;
    if (!recipient || typeof recipient !== 'object' || Array.isArray(recipient)) {
      throw new SimulatorHttpError('PAY_3001', 'Payout request failed: recipient is missing.');
    }
    const rec = recipient as Record<string, unknown>;
    if (!RECIPIENT_DESTINATIONS.some((f) => typeof rec[f] === 'string' && rec[f] !== '')) {
      throw new SimulatorHttpError('PAY_3001', `Payout request failed: recipient needs one of ${RECIPIENT_DESTINATIONS.join(', ')}.`);
    }
    if (amount! > merchant.wallet) throw new SimulatorHttpError('PAY_3001', 'Payout request failed: insufficient wallet balance.');
    merchant.wallet -= amount!;
    const approval = merchant.settings.payoutApprovalRequired === true;
    const payout: SimulatedPayout = {
      payoutUid: this.state.newId('pyo'),
      amount: formatAmount(amount!),
      currency: body.currency as string,
      ...(typeof body.country === 'string' ? { country: body.country } : {}),
      recipient: { ...rec },
      ...(typeof body.reference === 'string' ? { reference: body.reference } : {}),
      status: approval ? 'PENDING_APPROVAL' : 'PENDING',
      merchantId: merchant.settings.merchantId,
      createdAt: this.clock.iso(),
    };
    this.state.payouts.set(payout.payoutUid, payout);
    // The answer shows the payout as accepted; without approval it settles right after.
    const answer = success(approval ? 202 : 201, payoutWire(payout));
    this.publish(payout, 'payout.created');
    // the next payout takes a scripted failure whatever its approval: it must not skip to a
    // later payout, maybe another merchant's
    const failureReason = this.state.scripts.takePayoutFailure();
    if (approval) {
      if (failureReason !== undefined) this.failOnApproval.set(payout.payoutUid, failureReason);
    } else if (failureReason !== undefined) this.fail(payout, failureReason);
    else this.succeed(payout);
    return answer;
  }

  lookup(req: SimulatorRequest, payoutUid: string): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'moneyMovementPerMinute');
    return success(200, payoutWire(ownedBy(this.state.payouts.get(payoutUid), merchant.settings.merchantId, 'PAY_3002')));
  }

  /** Approves a payout waiting for approval (`payout.succeeded`, or `payout.failed` when it took a scripted failure). */
  approve(payoutUid: string): void {
    const p = this.awaitingApproval(payoutUid);
    const scripted = this.failOnApproval.get(payoutUid);
    this.failOnApproval.delete(payoutUid);
    if (scripted !== undefined) this.fail(p, scripted);
    else this.succeed(p);
  }

  /** Rejects a payout waiting for approval (`payout.failed`, amount back in the wallet); a scripted failure it took is dropped. */
  reject(payoutUid: string, failureReason: string): void {
    assertText('rejectPayout: failureReason', failureReason);
    const p = this.awaitingApproval(payoutUid);
    this.failOnApproval.delete(payoutUid);
    this.fail(p, failureReason);
  }

  private awaitingApproval(payoutUid: string): SimulatedPayout {
    const p = this.state.payouts.get(payoutUid);
    if (!p) throw new Error(`Unknown payout ${payoutUid}`);
    if (p.status !== 'PENDING_APPROVAL') throw new Error(`Payout ${payoutUid} is ${p.status}, not PENDING_APPROVAL`);
    return p;
  }

  private succeed(p: SimulatedPayout): void {
    p.status = 'SUCCESS';
    this.publish(p, 'payout.succeeded');
  }

  private fail(p: SimulatedPayout, failureReason: string): void {
    p.status = 'FAILED';
    p.failureReason = failureReason;
    this.state.merchant(p.merchantId).wallet += parseAmount(p.amount)!;
    this.publish(p, 'payout.failed');
  }

  private publish(p: SimulatedPayout, type: string): void {
    this.events.publish(p.merchantId, type, payoutEventData(p));
  }
}

/** What the API answer and the event `data` of a payout both carry (never the recipient). */
function payoutFields(p: SimulatedPayout): Record<string, unknown> {
  return {
    payoutUid: p.payoutUid,
    amount: p.amount,
    currency: p.currency,
    status: p.status,
    ...(p.reference !== undefined ? { reference: p.reference } : {}),
    ...(p.failureReason !== undefined ? { failureReason: p.failureReason } : {}),
  };
}

/** A payout as the API answers it. */
function payoutWire(p: SimulatedPayout): Record<string, unknown> {
  return { ...payoutFields(p), createdAt: p.createdAt };
}

/** A payout as the `data` of a `payout.*` event. */
function payoutEventData(p: SimulatedPayout): Record<string, unknown> {
  return { ...payoutFields(p), merchantId: p.merchantId };
}
