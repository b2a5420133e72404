import { inspect } from 'node:util';
import type { PaymentEventEnvelope } from '../events/payment-event.types.js';
import { formatAmount, normaliseAmount, parseAmount } from './simulator.amounts.js';
import { assembleSimulator } from './simulator-assembly.js';
import type { SimulatorClock } from './simulator.clock.js';
import { BASE_PATHS } from './simulator.constants.js';
import { asDelivered, type SimulatorEventPublisher } from './simulator-event.publisher.js';
import { SimulatorFaults } from './simulator-faults.js';
import { assertDeliveryFaults, assertFault, assertSendEventArguments, assertSimulatorOptions, assertText, assertWebhookUrl } from './simulator-options.validation.js';
import { copyPayment, type SimulatorPaymentsHandler } from './simulator-payments.handler.js';
import type { SimulatorPayoutsHandler } from './simulator-payouts.handler.js';
import type { SimulatorRateLimiter } from './simulator-rate-limiter.js';
import type { SimulatorRouter } from './simulator.router.js';
import type { SimulatorServer } from './simulator-server.js';
import type { SimulatorState } from './simulator.state.js';
import type {
  PaymentOutcome,
  PaymentServiceSimulatorOptions,
  SimulatedMerchantSettings,
  SimulatedMode,
  SimulatedPayment,
  SimulatedPayout,
  SimulatedRefund,
  SimulatedSubaccountPayout,
  SimulatorDeliveryFaults,
  SimulatorDeliveryRecord,
  SimulatorDeliveryState,
  SimulatorFault,
  SimulatorRequestRecord,
} from './simulator.types.js';
import type { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';
import { waitUntilQuiet } from './simulator-quiet.js';

/**
 * In-process simulator of the payment service: a plain Node HTTP server on loopback
 * serving `/api/v1` (live) and `/sandbox/api/v1` (sandbox) with the service's behaviour,
 * error envelopes, rate limits and signed webhook delivery, plus switches for faults.
 *
 * ```ts
 * const sim = new PaymentServiceSimulator();
 * await sim.start();
 * // PAYMENT_BASE_URL = sim.url, PAYMENT_CLIENT_ID = 'sandbox-client', ...
 * await sim.stop();
 * ```
 * @publicApi
 */
export class PaymentServiceSimulator {
  private readonly clock: SimulatorClock;
  private readonly state: SimulatorState;
  private readonly limiter: SimulatorRateLimiter;
  private readonly deliverer: SimulatorWebhookDeliverer;
  private readonly publisher: SimulatorEventPublisher;
  private readonly faults = new SimulatorFaults();
  private readonly paymentsHandler: SimulatorPaymentsHandler;
  private readonly payoutsHandler: SimulatorPayoutsHandler;
  private readonly router: SimulatorRouter;
  private readonly server: SimulatorServer;
  /** `stop()` calls so far: a start that a stop overtook arms no timer behind it. */
  private stops = 0;

  constructor(options: PaymentServiceSimulatorOptions = {}) {
    assertSimulatorOptions(options);
    const parts = assembleSimulator(options, this.faults, () => this.now());
    this.clock = parts.clock;
    this.state = parts.state;
    this.limiter = parts.limiter;
    this.deliverer = parts.deliverer;
    this.publisher = parts.publisher;
    this.paymentsHandler = parts.paymentsHandler;
    this.payoutsHandler = parts.payoutsHandler;
    this.router = parts.router;
    this.server = parts.server;
  }

  /** Listens on loopback (a free port unless `port` is set). */
  async start(): Promise<void> {
    if (this.server.started) return;
    const stops = this.stops;
    this.deliverer.resume();
    await this.server.start();
    if (this.stops === stops) this.paymentsHandler.startTimers();
  }

  /**
   * Closes the server and every connection (stalled ones included), and ends the simulated
   * service's work: deliveries not done yet become `cancelled`, confirmations still to come are
   * dropped, session expiries disarmed (armed again by `start()`). For an outage the deliveries
   * live through, use `injectFault` instead.
   */
  async stop(): Promise<void> {
    this.stops++;
    this.deliverer.stop();
    this.paymentsHandler.stopTimers();
    await this.server.stop();
  }

  /** Service base URL (without `/api/v1`), e.g. `http://127.0.0.1:43121`. */
  get url(): string {
    return this.server.url;
  }

  /** `url` + `/sandbox/api/v1` or `/api/v1`. */
  apiUrl(mode: SimulatedMode = 'sandbox'): string {
    const base = BASE_PATHS.find(([, m]) => m === mode);
    if (!base) throw new TypeError(`apiUrl: mode must be 'sandbox' or 'live' (not ${JSON.stringify(mode)})`);
    return `${this.url}${base[0]}`;
  }

  /** Simulator time in ms (base clock + `advanceTime` offsets). */
  now(): number {
    return this.clock.now();
  }

  /** Moves the simulator clock forward: token expiry, rate-limit windows, session expiry, timestamps. */
  advanceTime(ms: number): void {
    this.clock.advance(ms);
    this.router.catchUp();
    // the sessions still pending expire that much sooner in real time
    this.paymentsHandler.rearmExpiries();
  }

  /** Forgets every rate-limit window. */
  resetRateLimits(): void {
    this.limiter.clear();
  }

  /** Every request received, in arrival order: a copy, like `payments` (read it again for later requests). */
  get requests(): ReadonlyArray<SimulatorRequestRecord> {
    return structuredClone(this.server.requests);
  }

  /** Forgets the request log (e.g. between phases of a test); a copy read before keeps its entries. */
  clearRequests(): void {
    this.server.requests.length = 0;
  }

  /** TCP connections accepted so far (keep-alive proof). */
  get connectionCount(): number {
    return this.server.connectionCount;
  }

  /** Settings of every merchant, in the order of the `merchants` option; fresh copies on every read. */
  get merchants(): ReadonlyArray<SimulatedMerchantSettings> {
    return [...this.state.merchants.values()].map((m) => this.state.settingsOf(m));
  }

  /** Settings of one merchant (a fresh copy); throws for an unknown id. */
  merchant(merchantId: number): SimulatedMerchantSettings {
    return this.state.settingsOf(this.state.merchant(merchantId));
  }

  /** Every payment; sessions past their TTL show as expired, even if their timer has not fired yet. */
  get payments(): ReadonlyArray<Readonly<SimulatedPayment>> {
    this.router.catchUp();
    return [...this.state.payments.values()].map(copyPayment);
  }

  get refunds(): ReadonlyArray<Readonly<SimulatedRefund>> {
    return [...this.state.refunds.values()].map((r) => ({ ...r }));
  }

  get payouts(): ReadonlyArray<Readonly<SimulatedPayout>> {
    // deep: a payout's recipient is an object of its own
    return structuredClone([...this.state.payouts.values()]);
  }

  get subaccountPayouts(): ReadonlyArray<Readonly<SimulatedSubaccountPayout>> {
    return [...this.state.subaccountPayouts.values()].map((p) => ({ ...p }));
  }

  /** Every event emitted, delivered or not, in emission order. */
  get events(): ReadonlyArray<PaymentEventEnvelope> {
    return asDelivered(this.publisher.log);
  }

  /** Every webhook delivery attempt, duplicates and re-triggers included. */
  get deliveryLog(): ReadonlyArray<SimulatorDeliveryRecord> {
    return structuredClone(this.deliverer.log);
  }

  /** Delivery state of every event. */
  get deliveries(): ReadonlyArray<SimulatorDeliveryState> {
    return this.deliverer.states;
  }

  payment(trxId: string): Readonly<SimulatedPayment> | undefined {
    this.router.catchUp();
    const p = this.state.payments.get(trxId);
    return p && copyPayment(p);
  }

  /** Wallet balance of a merchant (8-decimal string). */
  walletBalance(merchantId: number): string {
    return formatAmount(this.state.merchant(merchantId).wallet);
  }

  /** Balance of a subaccount after settlements and its payouts. */
  subaccountBalance(merchantId: number, subaccountId: string): string {
    const s = this.state.merchant(merchantId).subaccounts.get(subaccountId);
    if (!s) throw new Error(`Unknown subaccount ${subaccountId}`);
    return formatAmount(s.balance);
  }

  /**
   * Where this merchant's events go from now on, retries of earlier ones included. Other
   * merchants keep theirs. `undefined` stops delivery: new events are only recorded (`no-url`),
   * deliveries under way pause (`paused`) and go on when a URL is set again.
   */
  setWebhookUrl(merchantId: number, url: string | undefined): void {
    if (url !== undefined) assertWebhookUrl(url);
    this.state.merchant(merchantId).webhookUrl = url;
    if (url !== undefined) this.deliverer.resumePaused(merchantId);
  }

  /** An inactive merchant gets `PAY_6001` on every call, its existing tokens included. */
  setMerchantActive(merchantId: number, active: boolean): void {
    if (typeof active !== 'boolean') throw new TypeError(`setMerchantActive: active must be true or false (not ${JSON.stringify(active)})`);
    this.state.merchant(merchantId).active = active;
  }

  /** Sets the payout wallet of one merchant (numeric string). */
  setWalletBalance(merchantId: number, amount: string): void {
    this.state.merchant(merchantId).wallet = parseAmount(normaliseAmount(amount)) ?? 0n;
  }

  /**
   * Gives the next matching request(s) an error status, a dropped connection, no answer,
   * or (`rewrite`) a changed answer after real handling; see {@link SimulatorFault}.
   */
  injectFault(fault: SimulatorFault): void {
    assertFault(fault);
    this.faults.inject(fault);
  }

  /** Drops every fault not yet used and turns the delivery faults (`setDeliveryFaults`) off. */
  clearFaults(): void {
    this.faults.clear();
    this.deliverer.faults = {};
  }

  /**
   * Drops every outcome script not used yet (`scriptNextPayment`, `scriptPayment`,
   * `scriptNextRefundFailure`, `scriptNextPayoutFailure`): between tests, so one that failed
   * before using its script does not hand it to the next.
   */
  clearScripts(): void {
    this.state.scripts.clear();
  }

  /** Fate of the next created payment(s) without a more specific script (FIFO). */
  scriptNextPayment(...outcomes: PaymentOutcome[]): void {
    this.state.scripts.queueOutcomes(outcomes);
  }

  /** Fate of the payment created with this `idempotency_key`. A `custom` containing `sim:<outcome>` works too. */
  scriptPayment(idempotencyKey: string, outcome: PaymentOutcome): void {
    assertText('scriptPayment: idempotencyKey', idempotencyKey);
    this.state.scripts.setOutcomeForKey(idempotencyKey, outcome);
  }

  /** The next refund fails (`FAILED`, `refund.failed`). */
  scriptNextRefundFailure(failureReason = 'Provider declined the refund'): void {
    assertText('scriptNextRefundFailure: failureReason', failureReason);
    this.state.scripts.queueRefundFailure(failureReason);
  }

  /**
   * The next payout, of any merchant, fails after acceptance (`FAILED`, `payout.failed`, balance
   * restored). One that needs approval takes the script too and fails when approved; rejected, it
   * fails with the rejection's reason and the script is used up.
   */
  scriptNextPayoutFailure(failureReason = 'Recipient account closed'): void {
    assertText('scriptNextPayoutFailure: failureReason', failureReason);
    this.state.scripts.queuePayoutFailure(failureReason);
  }

  /**
   * Settles a `PENDING` payment by hand. `REJECTED` with reason `cancelled` or `expired`
   * emits `payment.cancelled` / `payment.expired`, any other reason `payment.failed`.
   */
  completePayment(trxId: string, status: 'SUCCESS' | 'REJECTED', reason?: string): void {
    if (status !== 'SUCCESS' && status !== 'REJECTED') throw new TypeError(`completePayment: status must be 'SUCCESS' or 'REJECTED' (not ${JSON.stringify(status)})`);
    this.paymentsHandler.complete(trxId, status, reason);
  }

  /** Approves a payout waiting for approval (`payout.succeeded`; `payout.failed` if it took `scriptNextPayoutFailure`). */
  approvePayout(payoutUid: string): void {
    this.payoutsHandler.approve(payoutUid);
  }

  /** Rejects a payout waiting for approval (`payout.failed`, balance restored). */
  rejectPayout(payoutUid: string, failureReason = 'Rejected by approver'): void {
    this.payoutsHandler.reject(payoutUid, failureReason);
  }

  /** Emits any event (e.g. `dispute.created`) for a merchant through the normal delivery path. */
  sendEvent(merchantId: number, type: string, data: Record<string, unknown>): PaymentEventEnvelope {
    assertSendEventArguments(type, data);
    // a copy as delivered: changing `data` or the returned envelope later changes neither the log nor the delivery
    const payload = asDelivered(data);
    // keyed by its resource like the simulator's own events (publish reads the id from `data`);
    // an unknown merchant throws in publish, before anything is logged or delivered
    const envelope = this.publisher.publish(merchantId, type, payload);
    return asDelivered(envelope);
  }

  /** Webhook fault switches, merged into the current ones (`{ duplicate: false }` turns one off; `clearFaults()` all). */
  setDeliveryFaults(faults: SimulatorDeliveryFaults): void {
    assertDeliveryFaults(faults);
    this.deliverer.faults = { ...this.deliverer.faults, ...faults };
  }

  /** The portal's Event Log re-trigger: one more attempt now, resolves with its record. */
  retrigger(eventId: string): Promise<SimulatorDeliveryRecord> {
    return this.deliverer.retrigger(eventId);
  }

  /**
   * Resolves when no payment confirmation, webhook delivery or retry is pending.
   * Events held back by `outOfOrder` are released once everything else is quiet. Sessions past
   * `paymentSessionTtlMs` expire first; a TTL still running is not waited for (a manual payment waits for the test).
   */
  waitForDeliveries(opts: { timeoutMs?: number } = {}): Promise<void> {
    return waitUntilQuiet(this.paymentsHandler, this.deliverer, opts.timeoutMs);
  }

  /** Same as {@link waitForDeliveries}. */
  idle(opts: { timeoutMs?: number } = {}): Promise<void> {
    return this.waitForDeliveries(opts);
  }

  /**
   * Serialised (a JSON logger, `JSON.stringify`): where it listens and which merchants it has,
   * never their secrets or the request log (its parts hold both).
   */
  toJSON(): { url: string; merchants: Array<{ merchantId: number; mode: SimulatedMode }> } {
    const url = this.server.started ? this.server.url : 'not started';
    return { url, merchants: [...this.state.merchants.values()].map(({ settings }) => ({ merchantId: settings.merchantId, mode: settings.mode })) };
  }

  /** Printed (`util.inspect(sim)`, a console): the same as {@link toJSON}. */
  [inspect.custom](): string {
    const { url, merchants } = this.toJSON();
    return `PaymentServiceSimulator { url: ${url}, merchants: [${merchants.map((m) => `${m.merchantId} (${m.mode})`).join(', ')}] }`;
  }
}
