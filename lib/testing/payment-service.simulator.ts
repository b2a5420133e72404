import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { PaymentEventEnvelope } from '../events/payment-event.types.js';
import { buildEvent } from './event-builders.js';
import { formatAmount, normaliseAmount, parseAmount } from './simulator.amounts.js';
import { defaultCodeForStatus, SIMULATOR_ERROR_TABLE, SimulatorHttpError } from './simulator.errors.js';
import { BASE_PATHS, DEFAULT_MERCHANT, SIMULATED_GATEWAYS, SIMULATOR_TOKEN_TTL_MS } from './simulator.constants.js';
import { SimulatorRateLimiter, SPEC_RATE_LIMITS } from './simulator-rate-limiter.js';
import { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';
import {
  PAYMENT_OUTCOMES,
  type PaymentOutcome,
  type PaymentServiceSimulatorOptions,
  type SimulatedMerchant,
  type SimulatedMode,
  type SimulatedPayment,
  type SimulatedPayout,
  type SimulatedRefund,
  type SimulatedSubaccountPayout,
  type SimulatorDeliveryFaults,
  type SimulatorDeliveryRecord,
  type SimulatorDeliveryState,
  type SimulatorFault,
  type SimulatorRequestRecord,
} from './simulator.types.js';

interface MerchantState {
  config: SimulatedMerchant;
  active: boolean;
  webhookUrl?: string;
  wallet: bigint;
  subaccounts: Map<string, { config: { subaccountId: string; autoPayout: boolean; failPayouts: boolean }; balance: bigint }>;
}

interface TokenRecord {
  merchantId: number;
  mode: SimulatedMode;
  issuedAt: number;
}

interface Ctx {
  method: string;
  route: string;
  mode: SimulatedMode;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  raw: Buffer;
  ip: string;
}

interface SimResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

type StoredFault = SimulatorFault & { remaining: number };

const CUSTOM_OUTCOME_TAG = /\bsim:([a-z-]+)\b/;
const CURRENCY = /^[A-Z]{3}$/;
const COUNTRY = /^[A-Z]{2}$/;
const RECIPIENT_DESTINATIONS = ['account_number', 'iban', 'phone', 'email', 'wallet_id', 'mobile_number'];

/**
 * In-process simulator of the payment service: a plain Node HTTP server on loopback
 * serving `/api/v1` (live) and `/sandbox/api/v1` (sandbox) with the spec's behaviour,
 * error envelopes, rate limits and signed webhook delivery, plus switches for faults.
 *
 * ```ts
 * const sim = new PaymentServiceSimulator();
 * await sim.start();
 * // PAYMENT_BASE_URL = sim.url, PAYMENT_CLIENT_ID = 'sandbox-client', ...
 * await sim.stop();
 * ```
 */
export class PaymentServiceSimulator {
  private readonly options: PaymentServiceSimulatorOptions;
  private readonly merchants = new Map<number, MerchantState>();
  private readonly tokensById = new Map<string, TokenRecord>();
  private readonly paymentsById = new Map<string, SimulatedPayment>();
  private readonly paymentByKey = new Map<string, string>();
  private readonly paymentStatusCodes = new Map<string, number>();
  private readonly refundsById = new Map<string, SimulatedRefund>();
  private readonly payoutsById = new Map<string, SimulatedPayout>();
  private readonly subaccountPayoutsById = new Map<string, SimulatedSubaccountPayout>();
  private readonly requestLog: SimulatorRequestRecord[] = [];
  private readonly eventLog: PaymentEventEnvelope[] = [];
  private readonly faults: StoredFault[] = [];
  private readonly outcomeQueue: PaymentOutcome[] = [];
  private readonly outcomeByKey = new Map<string, PaymentOutcome>();
  private readonly refundScripts: Array<{ failureReason: string }> = [];
  private readonly payoutScripts: Array<{ failureReason: string }> = [];
  private readonly stalled = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private readonly outcomeTimers = new Set<NodeJS.Timeout>();
  private readonly limiter: SimulatorRateLimiter;
  private readonly deliverer: SimulatorWebhookDeliverer;
  private server?: Server;
  private baseUrl?: string;
  private offsetMs = 0;
  private connections = 0;
  private seq = 0;

  constructor(options: PaymentServiceSimulatorOptions = {}) {
    this.options = options;
    const host = options.host ?? '127.0.0.1';
    // A test double holding credentials must not be reachable from the network.
    if (!/^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/.test(host)) {
      throw new Error(`PaymentServiceSimulator listens on loopback only (got host ${JSON.stringify(host)})`);
    }
    const clientIds = new Set<string>();
    for (const m of options.merchants ?? [DEFAULT_MERCHANT]) {
      if (this.merchants.has(m.merchantId)) throw new Error(`Duplicate merchantId ${m.merchantId}`);
      if (clientIds.has(m.clientId)) throw new Error(`Duplicate clientId ${JSON.stringify(m.clientId)}`);
      clientIds.add(m.clientId);
      this.merchants.set(m.merchantId, {
        config: { ...m },
        active: m.active ?? true,
        webhookUrl: m.webhookUrl,
        wallet: parseAmount(normaliseAmount(m.walletBalance ?? '1000')) ?? 0n,
        subaccounts: new Map(
          (m.subaccounts ?? []).map((s) => [
            s.subaccountId,
            {
              config: { subaccountId: s.subaccountId, autoPayout: s.autoPayout ?? true, failPayouts: s.failPayouts ?? false },
              balance: 0n,
            },
          ]),
        ),
      });
    }
    const rl = options.rateLimits ?? true;
    this.limiter = new SimulatorRateLimiter(
      () => this.now(),
      rl === false ? undefined : { ...SPEC_RATE_LIMITS, ...(rl === true ? {} : rl) },
    );
    this.deliverer = new SimulatorWebhookDeliverer({
      target: (id) => {
        const m = this.merchants.get(id);
        return m && { merchantId: id, webhookUrl: m.webhookUrl, webhookSecret: m.config.webhookSecret };
      },
      now: () => this.now(),
      signatureNow: () => (options.signatureClock ?? Date.now)(),
      timeScale: options.webhookTimeScale ?? 1e-5,
      timeoutMs: options.deliveryTimeoutMs ?? 5000,
    });
  }

  // ---------------------------------------------------------------- lifecycle

  /** Listens on loopback (a free port unless `port` is set). */
  async start(): Promise<void> {
    if (this.server) return;
    this.deliverer.resume();
    const server = createServer((req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        // Last resort: a handler bug must not take the simulator down.
        if (!res.headersSent && !res.destroyed) {
          this.write(res, { status: 500, body: new SimulatorHttpError('INTERNAL_ERROR', String(err)).toEnvelope() });
        }
      });
    });
    server.on('connection', (socket: Socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    const host = this.options.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    if (!addr || typeof addr === 'string') throw new Error('Simulator did not get a TCP address');
    this.server = server;
    this.baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
  }

  /** Closes the server, every connection (stalled ones included) and cancels pending deliveries. */
  async stop(): Promise<void> {
    this.deliverer.stop();
    for (const t of this.outcomeTimers) clearTimeout(t);
    this.outcomeTimers.clear();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const res of this.stalled) res.destroy();
    this.stalled.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  /** Service base URL (without `/api/v1`), e.g. `http://127.0.0.1:43121`. */
  get url(): string {
    if (!this.baseUrl) throw new Error('PaymentServiceSimulator is not started');
    return this.baseUrl;
  }

  /** `url` + `/sandbox/api/v1` or `/api/v1`. */
  apiUrl(mode: SimulatedMode = 'sandbox'): string {
    return `${this.url}${mode === 'sandbox' ? '/sandbox/api/v1' : '/api/v1'}`;
  }

  // ---------------------------------------------------------------- clock

  /** Simulator time in ms (base clock + `advanceTime` offsets). */
  now(): number {
    return (this.options.now ?? Date.now)() + this.offsetMs;
  }

  /** Moves the simulator clock forward: token expiry, rate-limit windows, timestamps. */
  advanceTime(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError('advanceTime expects a non-negative number of ms');
    this.offsetMs += ms;
    this.expireStaleSessions();
  }

  /** Forgets every rate-limit window. */
  resetRateLimits(): void {
    this.limiter.clear();
  }

  // ---------------------------------------------------------------- inspection

  /** Every request received, in arrival order. */
  get requests(): ReadonlyArray<SimulatorRequestRecord> {
    return this.requestLog;
  }

  /** Forgets the request log (e.g. between phases of a test). */
  clearRequests(): void {
    this.requestLog.length = 0;
  }

  /** TCP connections accepted so far (keep-alive proof). */
  get connectionCount(): number {
    return this.connections;
  }

  get payments(): ReadonlyArray<Readonly<SimulatedPayment>> {
    return [...this.paymentsById.values()].map((p) => ({ ...p, splits: p.splits.map((s) => ({ ...s })) }));
  }

  get refunds(): ReadonlyArray<Readonly<SimulatedRefund>> {
    return [...this.refundsById.values()].map((r) => ({ ...r }));
  }

  get payouts(): ReadonlyArray<Readonly<SimulatedPayout>> {
    return [...this.payoutsById.values()].map((p) => ({ ...p }));
  }

  get subaccountPayouts(): ReadonlyArray<Readonly<SimulatedSubaccountPayout>> {
    return [...this.subaccountPayoutsById.values()].map((p) => ({ ...p }));
  }

  /** Every event emitted, delivered or not, in emission order. */
  get events(): ReadonlyArray<PaymentEventEnvelope> {
    return this.eventLog;
  }

  /** Every webhook delivery attempt, duplicates and re-triggers included. */
  get deliveryLog(): ReadonlyArray<SimulatorDeliveryRecord> {
    return this.deliverer.log;
  }

  /** Delivery state of every event. */
  get deliveries(): ReadonlyArray<SimulatorDeliveryState> {
    return this.deliverer.states;
  }

  payment(trxId: string): Readonly<SimulatedPayment> | undefined {
    const p = this.paymentsById.get(trxId);
    return p && { ...p };
  }

  /** Wallet balance of a merchant (8-decimal string). */
  walletBalance(merchantId: number): string {
    return formatAmount(this.merchantState(merchantId).wallet);
  }

  /** Balance of a subaccount after settlements and its payouts. */
  subaccountBalance(merchantId: number, subaccountId: string): string {
    const s = this.merchantState(merchantId).subaccounts.get(subaccountId);
    if (!s) throw new Error(`Unknown subaccount ${subaccountId}`);
    return formatAmount(s.balance);
  }

  // ---------------------------------------------------------------- control

  setWebhookUrl(merchantId: number, url: string | undefined): void {
    this.merchantState(merchantId).webhookUrl = url;
  }

  setMerchantActive(merchantId: number, active: boolean): void {
    this.merchantState(merchantId).active = active;
  }

  setWalletBalance(merchantId: number, amount: string): void {
    this.merchantState(merchantId).wallet = parseAmount(normaliseAmount(amount)) ?? 0n;
  }

  /** Makes the next matching request(s) fail; see {@link SimulatorFault}. */
  injectFault(fault: SimulatorFault): void {
    const times = fault.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new RangeError('fault.times must be a positive integer');
    this.faults.push({ ...fault, remaining: times });
  }

  /** Drops every fault not yet used. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Fate of the next created payment(s) without a more specific script (FIFO). */
  scriptNextPayment(...outcomes: PaymentOutcome[]): void {
    for (const o of outcomes) this.outcomeQueue.push(assertOutcome(o));
  }

  /** Fate of the payment created with this `idempotency_key`. A `custom` containing `sim:<outcome>` works too. */
  scriptPayment(idempotencyKey: string, outcome: PaymentOutcome): void {
    this.outcomeByKey.set(idempotencyKey, assertOutcome(outcome));
  }

  /** The next refund fails (`FAILED`, `refund.failed`). */
  scriptNextRefundFailure(failureReason = 'Provider declined the refund'): void {
    this.refundScripts.push({ failureReason });
  }

  /** The next payout fails after acceptance (`FAILED`, `payout.failed`, balance restored). */
  scriptNextPayoutFailure(failureReason = 'Recipient account closed'): void {
    this.payoutScripts.push({ failureReason });
  }

  /**
   * Settles a `PENDING` payment by hand. `REJECTED` with reason `cancelled` or `expired`
   * emits `payment.cancelled` / `payment.expired`, any other reason `payment.failed`.
   */
  completePayment(trxId: string, status: 'SUCCESS' | 'REJECTED', reason?: string): void {
    const p = this.paymentsById.get(trxId);
    if (!p) throw new Error(`Unknown payment ${trxId}`);
    if (p.status !== 'PENDING') throw new Error(`Payment ${trxId} is already ${p.status}`);
    this.settle(p, status, reason ?? (status === 'REJECTED' ? 'failed' : undefined));
  }

  /** Approves a payout waiting for approval (`payout.succeeded`). */
  approvePayout(payoutUid: string): void {
    this.succeedPayout(this.pendingPayout(payoutUid));
  }

  /** Rejects a payout waiting for approval (`payout.failed`, balance restored). */
  rejectPayout(payoutUid: string, failureReason = 'Rejected by approver'): void {
    const p = this.pendingPayout(payoutUid);
    this.failPayout(p, failureReason);
  }

  /** Emits any event (e.g. `dispute.created`) for a merchant through the normal delivery path. */
  sendEvent(merchantId: number, type: string, data: Record<string, unknown>): PaymentEventEnvelope {
    this.merchantState(merchantId);
    return this.emit(merchantId, type, data, `${type}:${String(data.trxId ?? data.refundUid ?? data.payoutUid ?? '')}`);
  }

  /** Webhook fault switches (merged into the current ones). */
  setDeliveryFaults(faults: SimulatorDeliveryFaults): void {
    this.deliverer.faults = { ...this.deliverer.faults, ...faults };
  }

  /** The portal's Event Log re-trigger: one more attempt now, resolves with its record. */
  retrigger(eventId: string): Promise<SimulatorDeliveryRecord> {
    return this.deliverer.retrigger(eventId);
  }

  /**
   * Resolves when no payment confirmation, webhook delivery or retry is pending.
   * Events held back by `outOfOrder` are released once everything else is quiet.
   */
  async waitForDeliveries(opts: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    for (;;) {
      while (this.outcomeTimers.size > 0 || !this.deliverer.quiet) {
        if (Date.now() > deadline) {
          const pending = this.deliverer.states.filter((d) => d.state !== 'delivered' && d.state !== 'abandoned' && d.state !== 'no-url');
          throw new Error(
            `Simulator still busy after ${opts.timeoutMs} ms: ${this.outcomeTimers.size} confirmation(s), ` +
              `deliveries ${JSON.stringify(pending.map((d) => `${d.eventType}:${d.state}#${d.attempts}`))}`,
          );
        }
        await new Promise((r) => setTimeout(r, 2));
      }
      if (!this.deliverer.hasHeld) return;
      this.deliverer.releaseAll();
    }
  }

  /** Same as {@link waitForDeliveries}. */
  idle(opts: { timeoutMs?: number } = {}): Promise<void> {
    return this.waitForDeliveries(opts);
  }

  // ---------------------------------------------------------------- HTTP

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let parsed: URL;
    try {
      parsed = new URL(req.url ?? '/', 'http://simulator.invalid');
    } catch {
      parsed = new URL('http://simulator.invalid/');
    }
    let mode: SimulatedMode | undefined;
    let route = parsed.pathname;
    for (const [base, m] of BASE_PATHS) {
      if (parsed.pathname === base || parsed.pathname.startsWith(`${base}/`)) {
        mode = m;
        route = parsed.pathname.slice(base.length) || '/';
        break;
      }
    }
    const method = (req.method ?? 'GET').toUpperCase();
    const record: SimulatorRequestRecord = {
      method,
      path: parsed.pathname,
      route,
      mode,
      query: Object.fromEntries(parsed.searchParams),
      headers: { ...req.headers },
      body: undefined,
      status: 0,
      at: this.now(),
    };
    this.requestLog.push(record);

    const limit = this.options.maxBodyBytes ?? 1_048_576;
    const raw = await readBody(req, limit);
    if (raw === 'too-large') {
      record.code = 'PAYLOAD_TOO_LARGE';
      this.answer(res, record, errorResponse(new SimulatorHttpError('PAYLOAD_TOO_LARGE')), true);
      return;
    }
    if (raw === 'aborted') return;
    record.body = describeBody(raw);

    this.expireStaleSessions();
    const fault = this.takeFault(method, route, parsed.pathname, mode);
    if (fault && !fault.afterHandling) {
      this.applyFault(res, record, fault);
      return;
    }
    let response: SimResponse;
    try {
      if (!mode) throw new SimulatorHttpError('NOT_FOUND');
      response = this.route({ method, route, mode, query: record.query, headers: req.headers, raw, ip: req.socket.remoteAddress ?? '' });
    } catch (err) {
      response = errorResponse(err);
    }
    if (fault) {
      this.applyFault(res, record, fault);
      return;
    }
    this.answer(res, record, response);
  }

  private answer(res: ServerResponse, record: SimulatorRequestRecord, response: SimResponse, close = false): void {
    record.status = response.status;
    const body = response.body as { status?: string; code?: string } | undefined;
    if (body?.status === 'error') record.code = body.code;
    this.write(res, response, close);
  }

  private write(res: ServerResponse, response: SimResponse, close = false): void {
    const text = JSON.stringify(response.body);
    res.writeHead(response.status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      ...(close ? { connection: 'close' } : {}),
      ...response.headers,
    });
    res.end(text);
  }

  private takeFault(method: string, route: string, fullPath: string, mode: SimulatedMode | undefined): StoredFault | undefined {
    const i = this.faults.findIndex(
      (f) =>
        (!f.method || f.method === method) &&
        (!f.mode || f.mode === mode) &&
        (f.path === undefined ||
          (typeof f.path === 'string' ? f.path === route || f.path === fullPath : f.path.test(route))),
    );
    if (i < 0) return undefined;
    const f = this.faults[i];
    if (--f.remaining <= 0) this.faults.splice(i, 1);
    return f;
  }

  private applyFault(res: ServerResponse, record: SimulatorRequestRecord, fault: SimulatorFault): void {
    record.fault = fault.kind;
    if (fault.kind === 'reset') {
      const socket = res.socket;
      if (socket && typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
      else socket?.destroy();
      return;
    }
    if (fault.kind === 'stall') {
      this.stalled.add(res);
      res.on('close', () => this.stalled.delete(res));
      return;
    }
    const code = fault.code ?? defaultCodeForStatus(fault.status ?? 500);
    const status = fault.status ?? SIMULATOR_ERROR_TABLE[code]?.status ?? 500;
    const retryAfter = fault.retryAfterSeconds ?? (status === 429 ? 1 : undefined);
    const err = new SimulatorHttpError(code, undefined, {}, status, retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {});
    this.answer(res, record, errorResponse(err));
  }

  private route(ctx: Ctx): SimResponse {
    const { method, route } = ctx;
    const allow = (m: string): void => {
      if (method !== m) throw new SimulatorHttpError('METHOD_NOT_ALLOWED', undefined, {}, 405, { allow: m });
    };
    let m: RegExpExecArray | null;
    switch (route) {
      case '/authentication/token':
        allow('POST');
        return this.issueToken(ctx);
      case '/payment/create':
        allow('POST');
        return this.createPayment(ctx);
      case '/payment/status':
        allow('GET');
        return this.paymentStatus(ctx);
      case '/payments/gateways':
        allow('GET');
        return this.gateways(ctx);
      case '/payout':
        allow('POST');
        return this.createPayout(ctx);
      case '/subaccounts':
        allow('GET');
        return this.listSubaccounts(ctx);
    }
    if ((m = /^\/payment\/([^/]+)\/refund$/.exec(route))) {
      allow('POST');
      return this.createRefund(ctx, safeDecode(m[1]));
    }
    if ((m = /^\/refund\/([^/]+)$/.exec(route))) {
      allow('GET');
      return this.refundLookup(ctx, safeDecode(m[1]));
    }
    if ((m = /^\/payout\/([^/]+)$/.exec(route))) {
      allow('GET');
      return this.payoutLookup(ctx, safeDecode(m[1]));
    }
    throw new SimulatorHttpError('NOT_FOUND');
  }

  // ---------------------------------------------------------------- auth

  private issueToken(ctx: Ctx): SimResponse {
    this.limiter.enforce('tokenPerMinute', ctx.ip);
    const body = jsonBody(ctx);
    const errors: Record<string, string[]> = {};
    if (typeof body.client_id !== 'string' || !body.client_id) errors.client_id = ['The client_id field is required.'];
    if (typeof body.client_secret !== 'string' || !body.client_secret) errors.client_secret = ['The client_secret field is required.'];
    if (Object.keys(errors).length) throw new SimulatorHttpError('PAY_4000', undefined, errors);
    const merchant = [...this.merchants.values()].find((m) => m.config.clientId === body.client_id);
    if (!merchant || merchant.config.clientSecret !== body.client_secret) throw new SimulatorHttpError('PAY_1004');
    if (!merchant.active) throw new SimulatorHttpError('PAY_6001');
    if (merchant.config.mode !== ctx.mode) throw new SimulatorHttpError('PAY_1005');
    const token = `sim_${randomBytes(24).toString('hex')}`;
    this.tokensById.set(token, { merchantId: merchant.config.merchantId, mode: ctx.mode, issuedAt: this.now() });
    return ok(200, { access_token: token, token_type: 'Bearer', expires_in: SIMULATOR_TOKEN_TTL_MS / 1000 });
  }

  private authenticate(ctx: Ctx): { merchant: MerchantState; token: string } {
    const header = ctx.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) throw new SimulatorHttpError('PAY_1001');
    const rec = this.tokensById.get(m[1]);
    if (!rec) throw new SimulatorHttpError('PAY_1002');
    if (this.now() >= rec.issuedAt + SIMULATOR_TOKEN_TTL_MS) throw new SimulatorHttpError('PAY_1003');
    if (rec.mode !== ctx.mode) throw new SimulatorHttpError('PAY_2003');
    const merchant = this.merchants.get(rec.merchantId);
    if (!merchant?.active) throw new SimulatorHttpError('PAY_6001');
    return { merchant, token: m[1] };
  }

  // ---------------------------------------------------------------- payments

  private createPayment(ctx: Ctx): SimResponse {
    const { merchant, token } = this.authenticate(ctx);
    this.limiter.enforce('createPaymentPerMinute', token);
    const body = jsonBody(ctx);
    const errors: Record<string, string[]> = {};
    const amount = requireAmount(body.amount, 'amount', errors);
    if (body.currency === undefined) errors.currency = ['The currency field is required.'];
    else if (typeof body.currency !== 'string' || !CURRENCY.test(body.currency)) {
      errors.currency = ['The currency must be an ISO 4217 code (3 upper-case letters).'];
    }
    const key = body.idempotency_key;
    if (key === undefined) errors.idempotency_key = ['The idempotency_key field is required.'];
    else if (typeof key !== 'string' || key.length === 0 || key.length > 255) {
      errors.idempotency_key = ['The idempotency_key must be a string of 1 to 255 characters.'];
    }
    if (body.country !== undefined && (typeof body.country !== 'string' || !COUNTRY.test(body.country))) {
      errors.country = ['The country must be an ISO 3166-1 alpha-2 code (2 upper-case letters).'];
    }
    if (body.custom !== undefined && typeof body.custom !== 'string') errors.custom = ['The custom field must be a string.'];
    if (body.gateway !== undefined && !SIMULATED_GATEWAYS.some((g) => g.id === body.gateway)) {
      errors.gateway = ['The selected gateway is invalid.'];
    }
    const splits = this.validateSplits(merchant, body.splits, amount, errors);
    if (Object.keys(errors).length) throw new SimulatorHttpError('PAY_4000', undefined, errors);

    const idemKey = `${merchant.config.merchantId}:${key as string}`;
    const existingId = this.paymentByKey.get(idemKey);
    if (existingId) {
      const existing = this.paymentsById.get(existingId)!;
      return ok(this.paymentStatusCodes.get(existingId) ?? 200, this.paymentWire(existing));
    }

    const outcome = this.resolveOutcome(key as string, body.custom);
    if (outcome === 'provider-failure') throw new SimulatorHttpError('PAY_5003');
    const asynchronous = outcome === 'pending-then-succeed' || outcome === 'pending-then-fail';
    const gateway =
      (body.gateway as string | undefined) ??
      (outcome === 'no-api-refund' ? 'bank-transfer' : asynchronous ? 'mobile-money' : 'card');
    const at = new Date(this.now()).toISOString();
    const payment: SimulatedPayment = {
      trxId: this.newId('trx'),
      token: `pst_${randomBytes(12).toString('hex')}`,
      amount: formatAmount(amount!),
      currency: body.currency as string,
      status: 'PENDING',
      ...(typeof body.custom === 'string' ? { custom: body.custom } : {}),
      merchantId: merchant.config.merchantId,
      ...(typeof body.country === 'string' ? { country: body.country } : {}),
      gateway,
      idempotencyKey: key as string,
      outcome,
      splits,
      refundedAmount: formatAmount(0n),
      createdAt: at,
      updatedAt: at,
      mode: ctx.mode,
    };
    this.paymentsById.set(payment.trxId, payment);
    this.paymentByKey.set(idemKey, payment.trxId);
    const httpStatus = asynchronous ? 202 : 200;
    this.paymentStatusCodes.set(payment.trxId, httpStatus);
    // The answer shows the session as opened; a scripted outcome settles right after.
    const response = ok(httpStatus, this.paymentWire(payment));
    this.emit(merchant.config.merchantId, 'payment.created', this.paymentEventData(payment), `payment:${payment.trxId}`);
    switch (outcome) {
      case 'succeed':
      case 'no-api-refund':
        this.settle(payment, 'SUCCESS');
        break;
      case 'fail':
        this.settle(payment, 'REJECTED', 'failed');
        break;
      case 'cancel':
        this.settle(payment, 'REJECTED', 'cancelled');
        break;
      case 'expire':
        this.settle(payment, 'REJECTED', 'expired');
        break;
      case 'pending-then-succeed':
      case 'pending-then-fail': {
        this.emit(merchant.config.merchantId, 'payment.pending', this.paymentEventData(payment), `payment:${payment.trxId}`);
        const timer = setTimeout(() => {
          this.outcomeTimers.delete(timer);
          if (payment.status === 'PENDING') {
            this.settle(payment, outcome === 'pending-then-succeed' ? 'SUCCESS' : 'REJECTED', 'failed');
          }
        }, this.options.confirmationDelayMs ?? 20);
        this.outcomeTimers.add(timer);
        break;
      }
    }
    return response;
  }

  private validateSplits(
    merchant: MerchantState,
    raw: unknown,
    amount: bigint | undefined,
    errors: Record<string, string[]>,
  ): Array<{ subaccountId: string; amount: string }> {
    if (raw === undefined) return [];
    if (!Array.isArray(raw)) {
      errors.splits = ['The splits field must be an array.'];
      return [];
    }
    const out: Array<{ subaccountId: string; amount: string }> = [];
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

  private resolveOutcome(key: string, custom: unknown): PaymentOutcome {
    const byKey = this.outcomeByKey.get(key);
    if (byKey) {
      this.outcomeByKey.delete(key);
      return byKey;
    }
    const tag = typeof custom === 'string' ? CUSTOM_OUTCOME_TAG.exec(custom)?.[1] : undefined;
    if (tag && (PAYMENT_OUTCOMES as readonly string[]).includes(tag)) return tag as PaymentOutcome;
    return this.outcomeQueue.shift() ?? this.options.defaultOutcome ?? 'manual';
  }

  private settle(p: SimulatedPayment, status: 'SUCCESS' | 'REJECTED', reason?: string): void {
    p.status = status;
    p.updatedAt = new Date(this.now()).toISOString();
    const key = `payment:${p.trxId}`;
    if (status === 'REJECTED') {
      p.failureReason = reason ?? 'failed';
      const type = reason === 'cancelled' ? 'payment.cancelled' : reason === 'expired' ? 'payment.expired' : 'payment.failed';
      this.emit(p.merchantId, type, this.paymentEventData(p), key);
      return;
    }
    const merchant = this.merchantState(p.merchantId);
    const total = parseAmount(p.amount)!;
    let splitTotal = 0n;
    for (const s of p.splits) splitTotal += parseAmount(s.amount)!;
    merchant.wallet += total - splitTotal;
    this.emit(p.merchantId, 'payment.succeeded', this.paymentEventData(p), key);
    if (p.splits.length === 0) return;
    for (const s of p.splits) merchant.subaccounts.get(s.subaccountId)!.balance += parseAmount(s.amount)!;
    this.emit(
      p.merchantId,
      'split.settled',
      {
        trxId: p.trxId,
        merchantId: p.merchantId,
        currency: p.currency,
        splits: p.splits.map((s) => ({ subaccountId: s.subaccountId, amount: s.amount })),
      },
      `split:${p.trxId}`,
    );
    for (const s of p.splits) {
      const sub = merchant.subaccounts.get(s.subaccountId)!;
      if (!sub.config.autoPayout) continue;
      const payout: SimulatedSubaccountPayout = {
        payoutUid: this.newId('sap'),
        subaccountId: s.subaccountId,
        trxId: p.trxId,
        amount: s.amount,
        currency: p.currency,
        status: 'PENDING',
        merchantId: p.merchantId,
      };
      this.subaccountPayoutsById.set(payout.payoutUid, payout);
      const rkey = `subaccount_payout:${payout.payoutUid}`;
      this.emit(p.merchantId, 'subaccount_payout.created', { ...payout }, rkey);
      if (sub.config.failPayouts) {
        payout.status = 'FAILED';
        payout.failureReason = 'Subaccount destination rejected the transfer';
        this.emit(p.merchantId, 'subaccount_payout.failed', { ...payout }, rkey);
      } else {
        payout.status = 'SUCCESS';
        sub.balance -= parseAmount(s.amount)!;
        this.emit(p.merchantId, 'subaccount_payout.succeeded', { ...payout }, rkey);
      }
    }
  }

  private paymentStatus(ctx: Ctx): SimResponse {
    const { merchant, token } = this.authenticate(ctx);
    this.limiter.enforce('readsPerMinute', token);
    const trxId = ctx.query.trx_id;
    if (!trxId) throw new SimulatorHttpError('PAY_4000', undefined, { trx_id: ['The trx_id field is required.'] });
    return ok(200, this.paymentWire(this.ownPayment(merchant, trxId)));
  }

  private gateways(ctx: Ctx): SimResponse {
    const { token } = this.authenticate(ctx);
    this.limiter.enforce('readsPerMinute', token);
    return ok(200, SIMULATED_GATEWAYS.map((g) => ({ ...g })));
  }

  private ownPayment(merchant: MerchantState, trxId: string): SimulatedPayment {
    const p = this.paymentsById.get(trxId);
    if (!p || p.merchantId !== merchant.config.merchantId) throw new SimulatorHttpError('PAY_2001');
    return p;
  }

  // ---------------------------------------------------------------- refunds

  private createRefund(ctx: Ctx, trxId: string): SimResponse {
    const { merchant } = this.authenticate(ctx);
    this.limiter.enforce('moneyMovementPerMinute', merchant.config.clientId);
    const body = jsonBody(ctx);
    const p = this.ownPayment(merchant, trxId);
    if (p.status !== 'SUCCESS') throw new SimulatorHttpError('PAY_2004');
    if (!SIMULATED_GATEWAYS.find((g) => g.id === p.gateway)?.apiRefunds) throw new SimulatorHttpError('PAY_2006');
    const errors: Record<string, string[]> = {};
    const remaining = parseAmount(p.amount)! - parseAmount(p.refundedAmount)!;
    const amount = body.amount === undefined ? remaining : requireAmount(body.amount, 'amount', errors);
    if (body.reason !== undefined && typeof body.reason !== 'string') errors.reason = ['The reason field must be a string.'];
    if (amount !== undefined && amount > remaining) {
      errors.amount = [`The amount exceeds the refundable amount ${formatAmount(remaining)}.`];
    } else if (amount !== undefined && amount <= 0n) {
      errors.amount = ['Nothing left to refund.'];
    }
    if (Object.keys(errors).length) throw new SimulatorHttpError('PAY_4000', undefined, errors);
    const script = this.refundScripts.shift();
    const refund: SimulatedRefund = {
      refundUid: this.newId('rfd'),
      trxId: p.trxId,
      amount: formatAmount(amount!),
      currency: p.currency,
      status: script ? 'FAILED' : 'SUCCESS',
      ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
      ...(script ? { failureReason: script.failureReason } : {}),
      merchantId: p.merchantId,
      createdAt: new Date(this.now()).toISOString(),
    };
    this.refundsById.set(refund.refundUid, refund);
    if (!script) p.refundedAmount = formatAmount(parseAmount(p.refundedAmount)! + amount!);
    this.emit(p.merchantId, script ? 'refund.failed' : 'refund.succeeded', { ...refund }, `refund:${refund.refundUid}`);
    return ok(201, { ...refund });
  }

  private refundLookup(ctx: Ctx, refundUid: string): SimResponse {
    const { merchant } = this.authenticate(ctx);
    this.limiter.enforce('moneyMovementPerMinute', merchant.config.clientId);
    const r = this.refundsById.get(refundUid);
    if (!r || r.merchantId !== merchant.config.merchantId) throw new SimulatorHttpError('PAY_2005');
    return ok(200, { ...r });
  }

  // ---------------------------------------------------------------- payouts

  private createPayout(ctx: Ctx): SimResponse {
    const { merchant } = this.authenticate(ctx);
    this.limiter.enforce('moneyMovementPerMinute', merchant.config.clientId);
    const body = jsonBody(ctx);
    const errors: Record<string, string[]> = {};
    const amount = requireAmount(body.amount, 'amount', errors);
    if (body.currency === undefined) errors.currency = ['The currency field is required.'];
    else if (typeof body.currency !== 'string' || !CURRENCY.test(body.currency)) {
      errors.currency = ['The currency must be an ISO 4217 code (3 upper-case letters).'];
    }
    if (body.country !== undefined && (typeof body.country !== 'string' || !COUNTRY.test(body.country))) {
      errors.country = ['The country must be an ISO 3166-1 alpha-2 code (2 upper-case letters).'];
    }
    if (body.reference !== undefined && typeof body.reference !== 'string') errors.reference = ['The reference field must be a string.'];
    if (Object.keys(errors).length) throw new SimulatorHttpError('PAY_4000', undefined, errors);
    const recipient = body.recipient;
    if (!recipient || typeof recipient !== 'object' || Array.isArray(recipient)) {
      throw new SimulatorHttpError('PAY_3001', 'Payout request failed: recipient is missing.');
    }
    const rec = recipient as Record<string, unknown>;
    if (!RECIPIENT_DESTINATIONS.some((f) => typeof rec[f] === 'string' && rec[f] !== '')) {
      throw new SimulatorHttpError(
        'PAY_3001',
        `Payout request failed: recipient needs one of ${RECIPIENT_DESTINATIONS.join(', ')}.`,
      );
    }
    if (amount! > merchant.wallet) throw new SimulatorHttpError('PAY_3001', 'Payout request failed: insufficient wallet balance.');
    merchant.wallet -= amount!;
    const approval = merchant.config.payoutApprovalRequired === true;
    const payout: SimulatedPayout = {
      payoutUid: this.newId('pyo'),
      amount: formatAmount(amount!),
      currency: body.currency as string,
      ...(typeof body.country === 'string' ? { country: body.country } : {}),
      recipient: { ...rec },
      ...(typeof body.reference === 'string' ? { reference: body.reference } : {}),
      status: approval ? 'PENDING_APPROVAL' : 'PENDING',
      merchantId: merchant.config.merchantId,
      createdAt: new Date(this.now()).toISOString(),
    };
    this.payoutsById.set(payout.payoutUid, payout);
    // The answer shows the payout as accepted; without approval it settles right after.
    const response = ok(approval ? 202 : 201, this.payoutWire(payout));
    this.emit(payout.merchantId, 'payout.created', this.payoutEventData(payout), `payout:${payout.payoutUid}`);
    if (!approval) {
      const script = this.payoutScripts.shift();
      if (script) this.failPayout(payout, script.failureReason);
      else this.succeedPayout(payout);
    }
    return response;
  }

  private payoutLookup(ctx: Ctx, payoutUid: string): SimResponse {
    const { merchant } = this.authenticate(ctx);
    this.limiter.enforce('moneyMovementPerMinute', merchant.config.clientId);
    const p = this.payoutsById.get(payoutUid);
    if (!p || p.merchantId !== merchant.config.merchantId) throw new SimulatorHttpError('PAY_3002');
    return ok(200, this.payoutWire(p));
  }

  private listSubaccounts(ctx: Ctx): SimResponse {
    const { merchant } = this.authenticate(ctx);
    this.limiter.enforce('moneyMovementPerMinute', merchant.config.clientId);
    return ok(
      200,
      [...merchant.subaccounts.values()].map((s) => ({ subaccountId: s.config.subaccountId, balance: formatAmount(s.balance) })),
    );
  }

  private pendingPayout(payoutUid: string): SimulatedPayout {
    const p = this.payoutsById.get(payoutUid);
    if (!p) throw new Error(`Unknown payout ${payoutUid}`);
    if (p.status !== 'PENDING_APPROVAL') throw new Error(`Payout ${payoutUid} is ${p.status}, not PENDING_APPROVAL`);
    return p;
  }

  private succeedPayout(p: SimulatedPayout): void {
    p.status = 'SUCCESS';
    this.emit(p.merchantId, 'payout.succeeded', this.payoutEventData(p), `payout:${p.payoutUid}`);
  }

  private failPayout(p: SimulatedPayout, failureReason: string): void {
    p.status = 'FAILED';
    p.failureReason = failureReason;
    this.merchantState(p.merchantId).wallet += parseAmount(p.amount)!;
    this.emit(p.merchantId, 'payout.failed', this.payoutEventData(p), `payout:${p.payoutUid}`);
  }

  // ---------------------------------------------------------------- shapes

  private paymentWire(p: SimulatedPayment): Record<string, unknown> {
    return {
      trxId: p.trxId,
      token: p.token,
      amount: p.amount,
      currency: p.currency,
      status: p.status,
      ...(p.custom !== undefined ? { custom: p.custom } : {}),
      merchantId: p.merchantId,
      gateway: p.gateway,
      ...(p.country !== undefined ? { country: p.country } : {}),
      ...(p.failureReason !== undefined ? { failureReason: p.failureReason } : {}),
      refundedAmount: p.refundedAmount,
      ...(p.splits.length ? { splits: p.splits.map((s) => ({ ...s })) } : {}),
      createdAt: p.createdAt,
      updatedAt: p.updatedAt,
    };
  }

  private paymentEventData(p: SimulatedPayment): Record<string, unknown> {
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

  private payoutWire(p: SimulatedPayout): Record<string, unknown> {
    return {
      payoutUid: p.payoutUid,
      amount: p.amount,
      currency: p.currency,
      status: p.status,
      ...(p.reference !== undefined ? { reference: p.reference } : {}),
      ...(p.failureReason !== undefined ? { failureReason: p.failureReason } : {}),
      createdAt: p.createdAt,
    };
  }

  private payoutEventData(p: SimulatedPayout): Record<string, unknown> {
    return {
      payoutUid: p.payoutUid,
      amount: p.amount,
      currency: p.currency,
      status: p.status,
      merchantId: p.merchantId,
      ...(p.reference !== undefined ? { reference: p.reference } : {}),
      ...(p.failureReason !== undefined ? { failureReason: p.failureReason } : {}),
    };
  }

  // ---------------------------------------------------------------- events

  private emit(merchantId: number, type: string, data: Record<string, unknown>, resourceKey: string): PaymentEventEnvelope {
    const merchant = this.merchantState(merchantId);
    const envelope = buildEvent(type, data, {
      createdAt: new Date(this.now()).toISOString(),
      environment: merchant.config.mode === 'live' ? 'production' : 'sandbox',
    }) as PaymentEventEnvelope;
    this.eventLog.push(envelope);
    this.deliverer.enqueue(envelope, merchantId, resourceKey);
    return envelope;
  }

  // ---------------------------------------------------------------- helpers

  /** With `paymentSessionTtlMs`, `manual` payments still `PENDING` past it expire (`payment.expired`). */
  private expireStaleSessions(): void {
    const ttl = this.options.paymentSessionTtlMs;
    if (ttl === undefined) return;
    const now = this.now();
    for (const p of this.paymentsById.values()) {
      if (p.status === 'PENDING' && p.outcome === 'manual' && now - Date.parse(p.createdAt) >= ttl) {
        this.settle(p, 'REJECTED', 'expired');
      }
    }
  }

  private merchantState(merchantId: number): MerchantState {
    const m = this.merchants.get(merchantId);
    if (!m) throw new Error(`Unknown merchant ${merchantId}`);
    return m;
  }

  private newId(prefix: string): string {
    this.seq++;
    return `${prefix}_${this.seq.toString().padStart(6, '0')}${randomBytes(4).toString('hex')}`;
  }
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SimulatorHttpError('PAY_4000', undefined, { path: ['The path contains malformed percent-encoding.'] });
  }
}

function ok(status: number, data: unknown): SimResponse {
  return { status, body: { status: 'success', data } };
}

function errorResponse(err: unknown): SimResponse {
  const e = err instanceof SimulatorHttpError ? err : new SimulatorHttpError('INTERNAL_ERROR');
  return { status: e.status, body: e.toEnvelope(), headers: e.headers };
}

function assertOutcome(o: PaymentOutcome): PaymentOutcome {
  if (!PAYMENT_OUTCOMES.includes(o)) throw new TypeError(`Unknown payment outcome ${JSON.stringify(o)}`);
  return o;
}

function jsonBody(ctx: Ctx): Record<string, unknown> {
  if (ctx.raw.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(ctx.raw.toString('utf8'));
  } catch {
    throw new SimulatorHttpError('PAY_4000', undefined, { body: ['The request body must be valid JSON.'] });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new SimulatorHttpError('PAY_4000', undefined, { body: ['The request body must be a JSON object.'] });
  }
  return value as Record<string, unknown>;
}

function requireAmount(value: unknown, field: string, errors: Record<string, string[]>): bigint | undefined {
  if (value === undefined || value === null || value === '') {
    errors[field] = [`The ${field} field is required.`];
    return undefined;
  }
  const units = parseAmount(value);
  if (units === undefined) {
    errors[field] = [`The ${field} must be a numeric string with at most 8 decimals.`];
    return undefined;
  }
  if (units <= 0n) {
    errors[field] = [`The ${field} must be greater than 0.`];
    return undefined;
  }
  return units;
}

function describeBody(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Reads the whole body. Past `limit` bytes it keeps draining without buffering and
 * reports `too-large` at the end, so the client sees a clean 413 instead of a reset.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large' | 'aborted'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (value: Buffer | 'too-large' | 'aborted'): void => {
      if (!done) {
        done = true;
        resolve(value);
      }
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on('end', () => finish(size > limit ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', () => finish('aborted'));
    req.on('close', () => finish(req.complete ? (size > limit ? 'too-large' : Buffer.concat(chunks)) : 'aborted'));
  });
}
