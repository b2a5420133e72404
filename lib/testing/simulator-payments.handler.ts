import { assertText } from './simulator-options.validation.js';
import { randomBytes } from 'node:crypto';
import { formatAmount, parseAmount } from './simulator.amounts.js';
import type { SimulatorAuthHandler } from './simulator-auth.handler.js';
import type { SimulatorClock } from './simulator.clock.js';
import { MAX_TIMER_MS } from '../common/promise-timeout.util.js';
import { SIMULATED_GATEWAYS } from './simulator.constants.js';
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
import type { SimulatorSubaccountsHandler } from './simulator-subaccounts.handler.js';
import type { PaymentOutcome, SimulatedPayment } from './simulator.types.js';
// node:timers, not the globals: jest's fake timers replace those, and the simulator runs on real time
import { clearTimeout, setTimeout } from 'node:timers';

/** The options that shape how payments behave. */
export interface PaymentBehaviour {
  defaultOutcome?: PaymentOutcome;
  confirmationDelayMs?: number;
  paymentSessionTtlMs?: number;
}

/**
 * Payment sessions: `POST /payment/create`, `GET /payment/status`, `GET /payments/gateways`,
 * and how a session settles (scripted at once, after an asynchronous confirmation, by
 * hand, or by expiring).
 */
export class SimulatorPaymentsHandler {
  /** Confirmations of asynchronous payments not yet fired. */
  private readonly confirmations = new Set<NodeJS.Timeout>();
  /** Expiry timers of `manual` sessions still `PENDING` (with `paymentSessionTtlMs`), by trxId. */
  private readonly expiries = new Map<string, NodeJS.Timeout>();
  /** Between `start()` and `stop()`: a stopped simulator keeps no timer (its sessions still expire on the catch-ups). */
  private running = false;

  constructor(
    private readonly state: SimulatorState,
    private readonly clock: SimulatorClock,
    private readonly events: SimulatorEventPublisher,
    private readonly auth: SimulatorAuthHandler,
    private readonly subaccounts: SimulatorSubaccountsHandler,
    private readonly behaviour: PaymentBehaviour,
  ) {}

  /** Asynchronous confirmations still to come. */
  get pendingConfirmations(): number {
    return this.confirmations.size;
  }

  /** `start()`: arms the expiry of the sessions still pending (created before a `stop()`). */
  startTimers(): void {
    this.running = true;
    this.rearmExpiries();
  }

  /** `stop()`: drops the confirmations still to come and disarms every session expiry. */
  stopTimers(): void {
    this.running = false;
    for (const t of this.confirmations) clearTimeout(t);
    this.confirmations.clear();
    for (const t of this.expiries.values()) clearTimeout(t);
    this.expiries.clear();
  }

  create(req: SimulatorRequest): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'createPaymentPerMinute');
    const body = readJsonObject(req);
    const errors: FieldErrors = {};
    const amount = requireAmount(body.amount, 'amount', errors);
    checkCurrency(body, errors);
    const key = body.idempotency_key;
    if (key === undefined) errors.idempotency_key = ['The idempotency_key field is required.'];
    else if (typeof key !== 'string' || key.length === 0 || key.length > 255) {
      errors.idempotency_key = ['The idempotency_key must be a string of 1 to 255 characters.'];
    }
    checkCountry(body, errors);
    if (body.custom !== undefined && typeof body.custom !== 'string') errors.custom = ['The custom field must be a string.'];
    if (body.gateway !== undefined && !SIMULATED_GATEWAYS.some((g) => g.id === body.gateway)) {
      errors.gateway = ['The selected gateway is invalid.'];
    }
    const splits = this.subaccounts.parseSplits(merchant, body.splits, amount, errors);
    throwIfInvalid(errors);

    // Idempotency keys are per merchant: the same key of another merchant is another payment.
    const keyOfMerchant = `${merchant.settings.merchantId}:${key as string}`;
    const existingId = this.state.paymentIdsByKey.get(keyOfMerchant);
    if (existingId) {
      const existing = this.state.payments.get(existingId)!;
      return success(this.pendingStatus(existing), paymentWire(existing));
    }

    const outcome = this.state.scripts.takeOutcome(key as string, body.custom, this.behaviour.defaultOutcome ?? 'manual');
    if (outcome === 'provider-failure') throw new SimulatorHttpError('PAY_5003');
    const asynchronous = outcome === 'pending-then-succeed' || outcome === 'pending-then-fail';
    const gateway =
      (body.gateway as string | undefined) ?? (outcome === 'no-api-refund' ? 'bank-transfer' : asynchronous ? 'mobile-money' : 'card');
    const at = this.clock.iso();
    const payment: SimulatedPayment = {
      trxId: this.state.newId('trx'),
      token: `pst_${randomBytes(12).toString('hex')}`,
      amount: formatAmount(amount!),
      currency: body.currency as string,
      status: 'PENDING',
      ...(typeof body.custom === 'string' ? { custom: body.custom } : {}),
      merchantId: merchant.settings.merchantId,
      ...(typeof body.country === 'string' ? { country: body.country } : {}),
      gateway,
      idempotencyKey: key as string,
      outcome,
      splits,
      refundedAmount: formatAmount(0n),
      createdAt: at,
      updatedAt: at,
      mode: req.mode,
    };
    this.state.payments.set(payment.trxId, payment);
    this.state.paymentIdsByKey.set(keyOfMerchant, payment.trxId);
    const status = asynchronous ? 202 : 200;
    this.state.firstAnswerStatus.set(payment.trxId, status);
    // The answer shows the session as opened; a scripted outcome settles right after.
    const answer = success(status, paymentWire(payment));
    this.publish(payment, 'payment.created');
    this.runOutcome(payment, outcome);
    if (outcome === 'manual') this.armExpiry(payment);
    return answer;
  }

  status(req: SimulatorRequest): SimulatorAnswer {
    const { merchant } = this.auth.authorize(req, 'readsPerMinute');
    const trxId = req.query.trx_id;
    if (!trxId) throw new SimulatorHttpError('PAY_4000', undefined, { trx_id: ['The trx_id field is required.'] });
    const payment = ownedBy(this.state.payments.get(trxId), merchant.settings.merchantId, 'PAY_2001');
    return success(this.pendingStatus(payment), paymentWire(payment));
  }

  /** 202 while a payment created as asynchronous still awaits its provider (the service's note on asynchronous creation), else 200. */
  private pendingStatus(payment: SimulatedPayment): number {
    return payment.status === 'PENDING' ? (this.state.firstAnswerStatus.get(payment.trxId) ?? 200) : 200;
  }

  gateways(req: SimulatorRequest): SimulatorAnswer {
    this.auth.authorize(req, 'readsPerMinute');
    return success(200, SIMULATED_GATEWAYS.map((g) => ({ ...g })));
  }

  /** Settles a `PENDING` payment by hand; throws for an unknown or already settled (or expired) one. */
  complete(trxId: string, status: 'SUCCESS' | 'REJECTED', reason?: string): void {
    if (reason !== undefined) assertText('completePayment: reason', reason);
    // a session past its TTL whose timer has not fired yet is expired, not paid
    this.expireStaleSessions();
    const p = this.state.payments.get(trxId);
    if (!p) throw new Error(`Unknown payment ${trxId}`);
    if (p.status !== 'PENDING') throw new Error(`Payment ${trxId} is already ${p.status}`);
    this.settle(p, status, reason ?? (status === 'REJECTED' ? 'failed' : undefined));
  }

  /**
   * With `paymentSessionTtlMs`, `manual` payments still `PENDING` past it on the simulator clock
   * expire (`payment.expired`). True when one did.
   */
  expireStaleSessions(): boolean {
    const ttl = this.behaviour.paymentSessionTtlMs;
    if (ttl === undefined) return false;
    const now = this.clock.now();
    let expired = false;
    for (const p of this.state.payments.values()) {
      if (p.status === 'PENDING' && p.outcome === 'manual' && now - Date.parse(p.createdAt) >= ttl) {
        this.settle(p, 'REJECTED', 'expired');
        expired = true;
      }
    }
    return expired;
  }

  /** Arms the expiry of every `manual` session still `PENDING` again, for the clock as it is now (after `advanceTime()`). */
  rearmExpiries(): void {
    for (const p of this.state.payments.values()) {
      if (p.status === 'PENDING' && p.outcome === 'manual') this.armExpiry(p);
    }
  }

  /**
   * A real timer for when the simulator clock should reach the session's deadline (+1 ms: Node may
   * fire a timer a ms before `Date.now()` says it is due). If the clock has moved but not that far,
   * it is armed again for the rest; if it has not moved at all (a `now` option or jest's fake timers
   * hold it), the expiry is left to `advanceTime()` and the catch-ups instead of polling for ever.
   */
  private armExpiry(p: SimulatedPayment): void {
    const ttl = this.behaviour.paymentSessionTtlMs;
    if (ttl === undefined || !this.running) return;
    clearTimeout(this.expiries.get(p.trxId));
    const armedAt = this.clock.now();
    const delay = Math.min(Math.max(Date.parse(p.createdAt) + ttl - armedAt, 0) + 1, MAX_TIMER_MS);
    const timer = setTimeout(() => {
      this.expiries.delete(p.trxId);
      // every session due, in creation order, not only this one
      this.expireStaleSessions();
      if (p.status === 'PENDING' && this.clock.now() > armedAt) this.armExpiry(p);
    }, delay);
    this.expiries.set(p.trxId, timer);
  }

  private runOutcome(payment: SimulatedPayment, outcome: PaymentOutcome): void {
    switch (outcome) {
      case 'succeed':
      case 'no-api-refund':
        return this.settle(payment, 'SUCCESS');
      case 'fail':
        return this.settle(payment, 'REJECTED', 'failed');
      case 'cancel':
        return this.settle(payment, 'REJECTED', 'cancelled');
      case 'expire':
        return this.settle(payment, 'REJECTED', 'expired');
      case 'pending-then-succeed':
      case 'pending-then-fail': {
        this.publish(payment, 'payment.pending');
        const timer = setTimeout(() => {
          this.confirmations.delete(timer);
          // A test may have settled it by hand meanwhile.
          if (payment.status === 'PENDING') {
            this.settle(payment, outcome === 'pending-then-succeed' ? 'SUCCESS' : 'REJECTED', 'failed');
          }
        }, this.behaviour.confirmationDelayMs ?? 20);
        this.confirmations.add(timer);
        return;
      }
    }
  }

  /**
   * `REJECTED` with reason `cancelled` or `expired` emits `payment.cancelled` /
   * `payment.expired`, any other reason `payment.failed`. `SUCCESS` credits the wallet
   * with what the splits leave, then settles the splits.
   */
  private settle(p: SimulatedPayment, status: 'SUCCESS' | 'REJECTED', reason?: string): void {
    // settled, the session no longer expires
    clearTimeout(this.expiries.get(p.trxId));
    this.expiries.delete(p.trxId);
    p.status = status;
    p.updatedAt = this.clock.iso();
    if (status === 'REJECTED') {
      p.failureReason = reason ?? 'failed';
      this.publish(p, reason === 'cancelled' ? 'payment.cancelled' : reason === 'expired' ? 'payment.expired' : 'payment.failed');
      return;
    }
    const merchant = this.state.merchant(p.merchantId);
    let splitTotal = 0n;
    for (const s of p.splits) splitTotal += parseAmount(s.amount)!;
    merchant.wallet += parseAmount(p.amount)! - splitTotal;
    this.publish(p, 'payment.succeeded');
    this.subaccounts.settleSplits(p, merchant);
  }

  private publish(p: SimulatedPayment, type: string): void {
    this.events.publish(p.merchantId, type, paymentEventData(p));
  }
}

/** What the API answer and the event `data` of a payment both carry. */
function paymentFields(p: SimulatedPayment): Record<string, unknown> {
  return {
    trxId: p.trxId,
    token: p.token,
    amount: p.amount,
    currency: p.currency,
    status: p.status,
    ...(p.custom !== undefined ? { custom: p.custom } : {}),
    merchantId: p.merchantId,
    ...(p.failureReason !== undefined ? { failureReason: p.failureReason } : {}),
  };
}

/** A payment as the API answers it. */
function paymentWire(p: SimulatedPayment): Record<string, unknown> {
  return {
    ...paymentFields(p),
    gateway: p.gateway,
    ...(p.country !== undefined ? { country: p.country } : {}),
    refundedAmount: p.refundedAmount,
    ...(p.splits.length ? { splits: p.splits.map((s) => ({ ...s })) } : {}),
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

/** A payment as the `data` of a `payment.*` event. */
const paymentEventData = paymentFields;

/** A copy the caller may keep or change without touching the simulator's state. */
export function copyPayment(p: SimulatedPayment): SimulatedPayment {
  return { ...p, splits: p.splits.map((s) => ({ ...s })) };
}
