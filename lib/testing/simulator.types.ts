import type { PaymentTokenRequestOptions } from '../config/payment-module-options.interface.js';
import type { SimulatorRateLimits } from './simulator-rate-limiter.js';

/** Environment of a base path: `/sandbox/api/v1` is sandbox, `/api/v1` is live. @publicApi */
export type SimulatedMode = 'sandbox' | 'live';

/** A subaccount that receives split allocations. @publicApi */
export interface SimulatedSubaccount {
  /** Id used in `splits[].subaccount_id`. */
  subaccountId: string;
  /** Start automatic subaccount payouts after settlement. @default true */
  autoPayout?: boolean;
  /** Make the automatic payouts of this subaccount fail (`subaccount_payout.failed`). @default false */
  failPayouts?: boolean;
}

/** A merchant the simulator knows, with the credentials of one environment. @publicApi */
export interface SimulatedMerchant {
  merchantId: number;
  clientId: string;
  clientSecret: string;
  /** Key of the HMAC-SHA256 in the `X-Service-Signature` header of this merchant's webhooks. */
  webhookSecret: string;
  /** Sandbox credentials work only on `/sandbox/api/v1`, live ones only on `/api/v1`. */
  mode: SimulatedMode;
  /** Where events are POSTed; without one events are recorded in `sim.events` only. */
  webhookUrl?: string;
  /** Payout wallet, numeric string. @default '1000.00000000' */
  walletBalance?: string;
  /** `false` gives `PAY_6001`. @default true */
  active?: boolean;
  /** Payouts wait for `sim.approvePayout()` and answer 202. @default false */
  payoutApprovalRequired?: boolean;
  subaccounts?: SimulatedSubaccount[];
}

/**
 * A merchant as the simulator runs it now: its configuration with the defaults filled
 * in, plus the current webhook URL and active flag. Read it to configure the app under
 * test for that merchant. It holds the merchant's test credentials and webhook secret,
 * so keep it out of logs.
 * @publicApi
 */
export interface SimulatedMerchantSettings {
  readonly merchantId: number;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly webhookSecret: string;
  readonly mode: SimulatedMode;
  /** Where this merchant's events go now; `undefined` when they are only recorded. */
  readonly webhookUrl: string | undefined;
  /** `false` after `sim.setMerchantActive(id, false)`: every call of the merchant gets `PAY_6001`. */
  readonly active: boolean;
  readonly payoutApprovalRequired: boolean;
  readonly subaccounts: ReadonlyArray<Readonly<Required<SimulatedSubaccount>>>;
}

/**
 * Scripted fate of a payment.
 * - `manual`: stays `PENDING` until `sim.completePayment()`.
 * - `succeed` / `fail` / `cancel` / `expire`: created `PENDING` (200), then settles at once
 *   (`payment.succeeded` / `.failed` / `.cancelled` / `.expired`).
 * - `pending-then-succeed` / `pending-then-fail`: asynchronous provider, create answers 202,
 *   `payment.pending` follows `payment.created`, confirmation after `confirmationDelayMs`.
 * - `provider-failure`: every cascade provider fails: 500 `PAY_5003`, nothing is created.
 * - `no-api-refund`: succeeds through a provider without API refunds (refund → `PAY_2006`).
 * @publicApi
 */
export type PaymentOutcome =
  | 'manual'
  | 'succeed'
  | 'fail'
  | 'cancel'
  | 'expire'
  | 'pending-then-succeed'
  | 'pending-then-fail'
  | 'provider-failure'
  | 'no-api-refund';

/** @publicApi */
export const PAYMENT_OUTCOMES: readonly PaymentOutcome[] = Object.freeze([
  'manual',
  'succeed',
  'fail',
  'cancel',
  'expire',
  'pending-then-succeed',
  'pending-then-fail',
  'provider-failure',
  'no-api-refund',
]);

/**
 * Options of `new PaymentServiceSimulator()`. An unknown key (here, in a merchant or a subaccount)
 * throws a `TypeError` naming the likely key; a number out of its range a `RangeError`.
 * @publicApi
 */
export interface PaymentServiceSimulatorOptions {
  /** @default one sandbox merchant: id 1, `sandbox-client` / `sandbox-secret`, webhook secret `whsec_sandbox`, wallet 1000 */
  merchants?: SimulatedMerchant[] | undefined;
  /** Base clock in ms; `advanceTime()` adds to it. Drives token expiry, rate-limit windows and timestamps. @default Date.now */
  now?: (() => number) | undefined;
  /**
   * Clock (ms) of the `t=` of webhook signatures. Kept on real time by default so
   * `advanceTime()` for token tests does not push signatures out of a receiver's tolerance.
   * @default Date.now
   */
  signatureClock?: (() => number) | undefined;
  /**
   * Multiplies the webhook retry delays (5 min, 15 min, 1 h, 4 h, 24 h); real timers. From 0 to 24.855:
   * the 24 h retry must fit a Node timer (2^31−1 ms). @default 1e-5 (5 min → 3 ms)
   */
  webhookTimeScale?: number | undefined;
  /** Time-out of one webhook delivery request, in ms, from 1 to 2^31−1. @default 5000 */
  deliveryTimeoutMs?: number | undefined;
  /**
   * `true` = the service's limits per minute: 10 token calls per IP, 30 payment creations
   * and 60 reads per token, 30 refund/payout/subaccount calls per client id; `false` = off;
   * or overrides of some of them. @default true
   */
  rateLimits?: boolean | Partial<SimulatorRateLimits> | undefined;
  /** Fate of payments with no script. @default 'manual' */
  defaultOutcome?: PaymentOutcome | undefined;
  /** Real ms before an asynchronous (`pending-then-*`) payment is confirmed, from 0 to 2^31−1. @default 20 */
  confirmationDelayMs?: number | undefined;
  /**
   * Simulator-clock ms after which a `manual` payment still `PENDING` expires (`REJECTED`,
   * `payment.expired`). On the default clock it expires on its own, on a real timer; `advanceTime()`
   * brings that timer forward, and a clock held by a `now` option or jest's fake timers leaves the
   * expiry to `advanceTime()`. Every request, `completePayment()`, `payments`, `payment()` and
   * `waitForDeliveries()` first expire the sessions already past it, so an expired session cannot
   * be paid; `waitForDeliveries()` does not wait for a TTL still running.
   * @default undefined (sessions never expire by themselves)
   */
  paymentSessionTtlMs?: number | undefined;
  /** The token call's body the simulator takes: give it the module's `tokenRequest`. @default { clientIdField: 'client_id', clientSecretField: 'client_secret', encoding: 'json' } */
  tokenRequest?: Partial<PaymentTokenRequestOptions> | undefined;
  /** Largest request body accepted (413 above). @default 1048576 */
  maxBodyBytes?: number | undefined;
  /** Loopback only. @default '127.0.0.1' */
  host?: string | undefined;
  /** @default 0 (a free port) */
  port?: number | undefined;
}

/** A payment as the simulator holds it. @publicApi */
export interface SimulatedPayment {
  trxId: string;
  token: string;
  amount: string;
  currency: string;
  status: 'PENDING' | 'SUCCESS' | 'REJECTED';
  custom?: string;
  merchantId: number;
  country?: string;
  gateway: string;
  idempotencyKey: string;
  outcome: PaymentOutcome;
  /** Why a payment ended `REJECTED`: `failed`, `cancelled`, `expired` or a given reason. */
  failureReason?: string;
  splits: Array<{ subaccountId: string; amount: string }>;
  /** Sum of refunds so far. */
  refundedAmount: string;
  createdAt: string;
  updatedAt: string;
  mode: SimulatedMode;
}

/** @publicApi */
export interface SimulatedRefund {
  refundUid: string;
  trxId: string;
  amount: string;
  currency: string;
  status: 'SUCCESS' | 'FAILED';
  reason?: string;
  failureReason?: string;
  merchantId: number;
  createdAt: string;
}

/** @publicApi */
export interface SimulatedPayout {
  payoutUid: string;
  amount: string;
  currency: string;
  country?: string;
  recipient: Record<string, unknown>;
  reference?: string;
  status: 'PENDING_APPROVAL' | 'PENDING' | 'SUCCESS' | 'FAILED';
  failureReason?: string;
  merchantId: number;
  createdAt: string;
}

/** @publicApi */
export interface SimulatedSubaccountPayout {
  payoutUid: string;
  subaccountId: string;
  trxId: string;
  amount: string;
  currency: string;
  status: 'PENDING' | 'SUCCESS' | 'FAILED';
  failureReason?: string;
  merchantId: number;
}

/** One request the simulator received. @publicApi */
export interface SimulatorRequestRecord {
  method: string;
  /** Full path without query, e.g. `/sandbox/api/v1/payment/create`. */
  path: string;
  /** Path after the base (`/payment/create`), or the full path when no base matched. */
  route: string;
  mode?: SimulatedMode;
  query: Record<string, string>;
  /** Lower-cased header names. */
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, the raw text when it is not JSON, or `undefined` when empty. */
  body: unknown;
  /** HTTP status answered; 0 while unanswered or when the connection was reset/stalled. */
  status: number;
  /** Error `code` answered, if any. */
  code?: string;
  /** The kind of fault applied to this request, if any. */
  fault?: FaultKind;
  /** Simulator clock (ms) at arrival. */
  at: number;
}

/**
 * - `status`: answer an error envelope instead of (or, with `afterHandling`, after) handling.
 * - `reset`: drop the connection without an answer.
 * - `stall`: never answer; the client times out (or `stop()` closes it).
 * - `rewrite`: handle the request for real, then replace the JSON body and/or status of its answer.
 * - `trickle`: handle the request for real, then send its answer slowly: the headers at once, then
 *   a space every 250 ms for `trickleMs` (JSON may start with whitespace), then the body. A client
 *   that only times out idle connections waits the whole time.
 * @publicApi
 */
export type FaultKind = 'status' | 'reset' | 'stall' | 'rewrite' | 'trickle';

/**
 * The JSON body of a simulator answer: the success envelope, or the error envelope.
 * `data` is `any` so a `rewrite` can reshape the payload of any endpoint.
 * @publicApi
 */
export type SimulatorAnswerBody =
  | { status: 'success'; data: any }
  | { status: 'error'; code: string; message: string; errors: Record<string, string[]>; data: [] };

/** What a `rewrite` returns. A field left out keeps the real answer's value. @publicApi */
export interface SimulatorRewrittenAnswer {
  /** The new JSON body (any JSON value, e.g. a shape the service never documented). */
  body?: unknown;
  /** The new HTTP status, an integer from 200 to 599. The real answer's headers are kept. */
  status?: number;
}

/**
 * Replaces the answer of a request the simulator has already handled. `body` is a copy
 * of the real JSON body: build a new one and return it as `{ body }`, or change the copy
 * in place and return nothing. `request` is the request as logged in `sim.requests`.
 * A rewrite that throws or returns anything but `{ body?, status? }` makes the answer a
 * 500 `INTERNAL_ERROR` whose message names the problem. It must be synchronous: a Promise
 * (an `async` rewrite) is such a 500 too, and its rejection is ignored.
 * @publicApi
 */
export type SimulatorRewrite = (
  body: SimulatorAnswerBody,
  status: number,
  request: Readonly<SimulatorRequestRecord>,
) => SimulatorRewrittenAnswer | void;

/** A fault the next matching request(s) get. An unknown key, or a field of another kind, throws. @publicApi */
export interface SimulatorFault {
  method?: 'GET' | 'POST';
  /** Path after the base (`/payment/create`) or a RegExp tested against it. */
  path?: string | RegExp;
  /** Only for this environment. */
  mode?: SimulatedMode;
  kind: FaultKind;
  /** For `status`. @default the status that goes with `code`, else 500 */
  status?: number;
  /** For `status`: error code in the envelope. @default derived from `status` */
  code?: string;
  /** For `status`: adds `Retry-After`. For 429 the default is 1. */
  retryAfterSeconds?: number;
  /** How many matching requests get the fault. @default 1 */
  times?: number;
  /** Apply the real effect first, then fail (the service acted but the answer was lost). A `rewrite` always does. */
  afterHandling?: boolean;
  /** For `trickle`: how long the answer takes after its headers. @default 30000 */
  trickleMs?: number;
  /** Required for `rewrite`, and only allowed there: builds the answer the client gets instead of the real one. */
  rewrite?: SimulatorRewrite;
}

/** One attempt of one webhook delivery. @publicApi */
export interface SimulatorDeliveryRecord {
  eventId: string;
  eventType: string;
  /** The merchant the event belongs to (whose webhook URL and secret the attempt used). */
  merchantId: number;
  /** 1…6 on the retry schedule; above 6 for re-triggers. */
  attempt: number;
  url: string;
  /** HTTP status answered by the receiver. */
  status?: number;
  /** First 1 KB of the receiver's answer body (UTF-8), when it answered. */
  responseBody?: string;
  /** Network error / time-out text when there was no answer. */
  error?: string;
  /** A duplicate copy sent by the `duplicate` fault switch. */
  duplicate?: boolean;
  /** The `X-Service-Signature` value sent. */
  signature: string;
  /** Simulator clock (ms) when the attempt was sent. */
  at: number;
}

/**
 * State of one event's delivery. `no-url`: the merchant had no webhook URL when the event
 * was emitted, so it is only recorded. `paused`: the URL was removed while the delivery was
 * under way; it goes on, with its next attempt, when a URL is set again.
 * @publicApi
 */
export interface SimulatorDeliveryState {
  eventId: string;
  eventType: string;
  merchantId: number;
  state: 'queued' | 'in-flight' | 'retry-scheduled' | 'delivered' | 'abandoned' | 'no-url' | 'paused' | 'held' | 'cancelled';
  attempts: number;
}

/** Webhook fault switches. @publicApi */
export interface SimulatorDeliveryFaults {
  /** Send every event this many extra times (`true` = 1). @default 0 */
  duplicate?: boolean | number;
  /** Send the copies at the same time as the original instead of after it. @default false */
  concurrentDuplicates?: boolean;
  /**
   * Hold `*.created` / `*.pending` events of a resource back until its next event
   * (e.g. `payment.succeeded`), then send that one first: `succeeded, created, pending`.
   */
  outOfOrder?: boolean;
  /** Sign with this secret instead of the merchant's (signature failure tests). */
  wrongSecret?: string;
}
