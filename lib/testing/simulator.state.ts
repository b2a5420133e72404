import { randomBytes } from 'node:crypto';
import { normaliseAmount, parseAmount } from './simulator.amounts.js';
import {
  PAYMENT_OUTCOMES,
  type PaymentOutcome,
  type SimulatedMerchant,
  type SimulatedMerchantSettings,
  type SimulatedMode,
  type SimulatedPayment,
  type SimulatedPayout,
  type SimulatedRefund,
  type SimulatedSubaccountPayout,
} from './simulator.types.js';

/** A subaccount with its defaults filled in and its running balance (units of 1e-8). */
export interface SubaccountRecord {
  subaccountId: string;
  autoPayout: boolean;
  failPayouts: boolean;
  balance: bigint;
}

/** A merchant as configured, plus what tests and requests change over time. */
export interface MerchantRecord {
  readonly settings: Readonly<SimulatedMerchant>;
  active: boolean;
  webhookUrl?: string;
  /** Payout wallet in units of 1e-8. */
  wallet: bigint;
  readonly subaccounts: Map<string, SubaccountRecord>;
}

/** Who an access token belongs to, for which environment, since when. */
export interface TokenRecord {
  merchantId: number;
  mode: SimulatedMode;
  issuedAt: number;
}

/** `sim:<outcome>` inside a payment's `custom` text scripts that payment (`sim:fail-order-7`: `fail`). */
const CUSTOM_OUTCOME_TAG = new RegExp(`\\bsim:(${[...PAYMENT_OUTCOMES].sort((a, b) => b.length - a.length).join('|')})(?![a-z])`);

/** What tests queued up for the next payments, refunds and payouts. */
class SimulatorScripts {
  private readonly nextOutcomes: PaymentOutcome[] = [];
  private readonly outcomesByKey = new Map<string, PaymentOutcome>();
  private readonly refundFailures: string[] = [];
  private readonly payoutFailures: string[] = [];

  queueOutcomes(outcomes: readonly PaymentOutcome[]): void {
    // all checked before any is queued: a refused call leaves no script for the next payments
    this.nextOutcomes.push(...outcomes.map(assertOutcome));
  }

  setOutcomeForKey(idempotencyKey: string, outcome: PaymentOutcome): void {
    this.outcomesByKey.set(idempotencyKey, assertOutcome(outcome));
  }

  /**
   * The fate of a new payment, most specific script first: its idempotency key, a
   * `sim:` tag in `custom`, the queue, then `fallback`. Key and queue scripts are used up.
   */
  takeOutcome(idempotencyKey: string, custom: unknown, fallback: PaymentOutcome): PaymentOutcome {
    const byKey = this.outcomesByKey.get(idempotencyKey);
    if (byKey) {
      this.outcomesByKey.delete(idempotencyKey);
      return byKey;
    }
    const tag = typeof custom === 'string' ? CUSTOM_OUTCOME_TAG.exec(custom)?.[1] : undefined;
    if (tag && (PAYMENT_OUTCOMES as readonly string[]).includes(tag)) return tag as PaymentOutcome;
    return this.nextOutcomes.shift() ?? fallback;
  }

  queueRefundFailure(failureReason: string): void {
    this.refundFailures.push(failureReason);
  }

  /** The failure reason of the next refund, if one was scripted. */
  takeRefundFailure(): string | undefined {
    return this.refundFailures.shift();
  }

  queuePayoutFailure(failureReason: string): void {
    this.payoutFailures.push(failureReason);
  }

  /** The failure reason of the next payout, if one was scripted. */
  takePayoutFailure(): string | undefined {
    return this.payoutFailures.shift();
  }

  /** Drops every script not used yet. */
  clear(): void {
    this.nextOutcomes.length = 0;
    this.outcomesByKey.clear();
    this.refundFailures.length = 0;
    this.payoutFailures.length = 0;
  }
}

/** Everything the simulated service knows. Handlers change it; the facade reads copies of it. */
export class SimulatorState {
  readonly merchants = new Map<number, MerchantRecord>();
  readonly tokens = new Map<string, TokenRecord>();
  readonly payments = new Map<string, SimulatedPayment>();
  /** `<merchantId>:<idempotency_key>` → `trxId`: a repeated key finds the first payment. */
  readonly paymentIdsByKey = new Map<string, string>();
  /** HTTP status of each payment's first answer; a retry with its key gets the same one. */
  readonly firstAnswerStatus = new Map<string, number>();
  readonly refunds = new Map<string, SimulatedRefund>();
  readonly payouts = new Map<string, SimulatedPayout>();
  readonly subaccountPayouts = new Map<string, SimulatedSubaccountPayout>();
  readonly scripts = new SimulatorScripts();
  private seq = 0;

  constructor(merchants: readonly SimulatedMerchant[]) {
    const clientIds = new Set<string>();
    for (const m of merchants) {
      if (this.merchants.has(m.merchantId)) throw new Error(`Duplicate merchantId ${m.merchantId}`);
      // The token call finds the merchant by client id, so it must name exactly one.
      if (clientIds.has(m.clientId)) throw new Error(`Duplicate clientId ${JSON.stringify(m.clientId)}`);
      clientIds.add(m.clientId);
      this.merchants.set(m.merchantId, {
        settings: { ...m },
        active: m.active ?? true,
        webhookUrl: m.webhookUrl,
        wallet: parseAmount(normaliseAmount(m.walletBalance ?? '1000')) ?? 0n,
        subaccounts: new Map(
          (m.subaccounts ?? []).map((s) => [
            s.subaccountId,
            { subaccountId: s.subaccountId, autoPayout: s.autoPayout ?? true, failPayouts: s.failPayouts ?? false, balance: 0n },
          ]),
        ),
      });
    }
  }

  /** The merchant with this id; throws for an unknown id (a mistake in the test). */
  merchant(merchantId: number): MerchantRecord {
    const m = this.merchants.get(merchantId);
    if (!m) throw new Error(`Unknown merchant ${merchantId}`);
    return m;
  }

  /** A fresh copy of a merchant's settings; changing it changes nothing in the simulator. */
  settingsOf(m: MerchantRecord): SimulatedMerchantSettings {
    const { merchantId, clientId, clientSecret, webhookSecret, mode } = m.settings;
    return {
      merchantId,
      clientId,
      clientSecret,
      webhookSecret,
      mode,
      webhookUrl: m.webhookUrl,
      active: m.active,
      payoutApprovalRequired: m.settings.payoutApprovalRequired === true,
      subaccounts: [...m.subaccounts.values()].map(({ subaccountId, autoPayout, failPayouts }) => ({ subaccountId, autoPayout, failPayouts })),
    };
  }

  merchantByClientId(clientId: string): MerchantRecord | undefined {
    for (const m of this.merchants.values()) if (m.settings.clientId === clientId) return m;
    return undefined;
  }

  /** `<prefix>_` + a sequence number (creation order sorts) + random hex (ids never repeat across runs). */
  newId(prefix: string): string {
    this.seq++;
    return `${prefix}_${this.seq.toString().padStart(6, '0')}${randomBytes(4).toString('hex')}`;
  }
}

function assertOutcome(o: PaymentOutcome): PaymentOutcome {
  if (!PAYMENT_OUTCOMES.includes(o)) throw new TypeError(`Unknown payment outcome ${JSON.stringify(o)}; known: ${PAYMENT_OUTCOMES.join(', ')}`);
  return o;
}
