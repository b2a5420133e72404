import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { PaymentEventEnvelope } from '../events/payment-event.types.js';
import { formatAmount, normaliseAmount, parseAmount } from './simulator.amounts.js';
import { SimulatorAuthHandler } from './simulator-auth.handler.js';
import { SimulatorClock } from './simulator.clock.js';
import { BASE_PATHS, DEFAULT_MERCHANT } from './simulator.constants.js';
import { defaultCodeForStatus, SIMULATOR_ERROR_TABLE, SimulatorHttpError } from './simulator.errors.js';
import { SimulatorEventPublisher } from './simulator-event.publisher.js';
import { SimulatorPaymentsHandler } from './simulator-payments.handler.js';
import { SimulatorPayoutsHandler } from './simulator-payouts.handler.js';
import { SimulatorRateLimiter, SPEC_RATE_LIMITS } from './simulator-rate-limiter.js';
import { SimulatorRefundsHandler } from './simulator-refunds.handler.js';
import { SimulatorRouter } from './simulator.router.js';
import { errorAnswer, type SimulatorAnswer } from './simulator-request.js';
import { SimulatorState } from './simulator.state.js';
import { SimulatorSubaccountsHandler } from './simulator-subaccounts.handler.js';
import type {
  PaymentOutcome,
  PaymentServiceSimulatorOptions,
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
import { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';

type StoredFault = SimulatorFault & { remaining: number };

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
 */
export class PaymentServiceSimulator {
  private readonly clock: SimulatorClock;
  private readonly state: SimulatorState;
  private readonly limiter: SimulatorRateLimiter;
  private readonly deliverer: SimulatorWebhookDeliverer;
  private readonly publisher: SimulatorEventPublisher;
  private readonly options: PaymentServiceSimulatorOptions;
  private readonly faults: StoredFault[] = [];
  private readonly requestLog: SimulatorRequestRecord[] = [];
  private readonly stalled = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  private readonly router: SimulatorRouter;
  private server?: Server;
  private baseUrl?: string;
  private connections = 0;
  private readonly paymentsHandler: SimulatorPaymentsHandler;
  private readonly payoutsHandler: SimulatorPayoutsHandler;

  constructor(options: PaymentServiceSimulatorOptions = {}) {
    this.options = options;
    const host = options.host ?? '127.0.0.1';
    // A test double holding credentials must not be reachable from the network.
    if (!/^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/.test(host)) {
      throw new Error(`PaymentServiceSimulator listens on loopback only (got host ${JSON.stringify(host)})`);
    }
    this.clock = new SimulatorClock(options.now);
    this.state = new SimulatorState(options.merchants ?? [DEFAULT_MERCHANT]);
    const rl = options.rateLimits ?? true;
    this.limiter = new SimulatorRateLimiter(
      () => this.now(),
      rl === false ? undefined : { ...SPEC_RATE_LIMITS, ...(rl === true ? {} : rl) },
    );
    this.deliverer = new SimulatorWebhookDeliverer({
      target: (id) => {
        const m = this.state.merchants.get(id);
        return m && { merchantId: id, webhookUrl: m.webhookUrl, webhookSecret: m.settings.webhookSecret };
      },
      now: () => this.now(),
      signatureNow: () => (options.signatureClock ?? Date.now)(),
      timeScale: options.webhookTimeScale ?? 1e-5,
      timeoutMs: options.deliveryTimeoutMs ?? 5000,
    });
    this.publisher = new SimulatorEventPublisher(this.state, this.clock, this.deliverer);
    const { state, clock, publisher: events, limiter } = this;
    const auth = new SimulatorAuthHandler(state, clock, limiter);
    const subaccounts = new SimulatorSubaccountsHandler(state, events, auth, limiter);
    this.paymentsHandler = new SimulatorPaymentsHandler(state, clock, events, auth, limiter, subaccounts, options);
    this.payoutsHandler = new SimulatorPayoutsHandler(state, clock, events, auth, limiter);
    const refunds = new SimulatorRefundsHandler(state, clock, events, auth, limiter);
    this.router = new SimulatorRouter({ auth, payments: this.paymentsHandler, refunds, payouts: this.payoutsHandler, subaccounts });
  }

  /** Listens on loopback (a free port unless `port` is set). */
  async start(): Promise<void> {
    if (this.server) return;
    this.deliverer.resume();
    const server = createServer((req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        // Last resort: a handler bug must not take the simulator down.
        if (!res.headersSent && !res.destroyed) {
          write(res, { status: 500, body: new SimulatorHttpError('INTERNAL_ERROR', String(err)).toEnvelope() });
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
    this.paymentsHandler.cancelConfirmations();
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

  /** Simulator time in ms (base clock + `advanceTime` offsets). */
  now(): number {
    return this.clock.now();
  }

  /** Moves the simulator clock forward: token expiry, rate-limit windows, timestamps. */
  advanceTime(ms: number): void {
    this.clock.advance(ms);
    this.paymentsHandler.expireStaleSessions();
  }

  /** Forgets every rate-limit window. */
  resetRateLimits(): void {
    this.limiter.clear();
  }

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
    return [...this.state.payments.values()].map(copyPayment);
  }

  get refunds(): ReadonlyArray<Readonly<SimulatedRefund>> {
    return [...this.state.refunds.values()].map((r) => ({ ...r }));
  }

  get payouts(): ReadonlyArray<Readonly<SimulatedPayout>> {
    return [...this.state.payouts.values()].map((p) => ({ ...p }));
  }

  get subaccountPayouts(): ReadonlyArray<Readonly<SimulatedSubaccountPayout>> {
    return [...this.state.subaccountPayouts.values()].map((p) => ({ ...p }));
  }

  /** Every event emitted, delivered or not, in emission order. */
  get events(): ReadonlyArray<PaymentEventEnvelope> {
    return this.publisher.log;
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

  setWebhookUrl(merchantId: number, url: string | undefined): void {
    this.state.merchant(merchantId).webhookUrl = url;
  }

  setMerchantActive(merchantId: number, active: boolean): void {
    this.state.merchant(merchantId).active = active;
  }

  setWalletBalance(merchantId: number, amount: string): void {
    this.state.merchant(merchantId).wallet = parseAmount(normaliseAmount(amount)) ?? 0n;
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
    this.state.scripts.queueOutcomes(outcomes);
  }

  /** Fate of the payment created with this `idempotency_key`. A `custom` containing `sim:<outcome>` works too. */
  scriptPayment(idempotencyKey: string, outcome: PaymentOutcome): void {
    this.state.scripts.setOutcomeForKey(idempotencyKey, outcome);
  }

  /** The next refund fails (`FAILED`, `refund.failed`). */
  scriptNextRefundFailure(failureReason = 'Provider declined the refund'): void {
    this.state.scripts.queueRefundFailure(failureReason);
  }

  /** The next payout fails after acceptance (`FAILED`, `payout.failed`, balance restored). */
  scriptNextPayoutFailure(failureReason = 'Recipient account closed'): void {
    this.state.scripts.queuePayoutFailure(failureReason);
  }

  /**
   * Settles a `PENDING` payment by hand. `REJECTED` with reason `cancelled` or `expired`
   * emits `payment.cancelled` / `payment.expired`, any other reason `payment.failed`.
   */
  completePayment(trxId: string, status: 'SUCCESS' | 'REJECTED', reason?: string): void {
    this.paymentsHandler.complete(trxId, status, reason);
  }

  /** Approves a payout waiting for approval (`payout.succeeded`). */
  approvePayout(payoutUid: string): void {
    this.payoutsHandler.approve(payoutUid);
  }

  /** Rejects a payout waiting for approval (`payout.failed`, balance restored). */
  rejectPayout(payoutUid: string, failureReason = 'Rejected by approver'): void {
    this.payoutsHandler.reject(payoutUid, failureReason);
  }

  /** Emits any event (e.g. `dispute.created`) for a merchant through the normal delivery path. */
  sendEvent(merchantId: number, type: string, data: Record<string, unknown>): PaymentEventEnvelope {
    this.state.merchant(merchantId);
    return this.publisher.publish(merchantId, type, data, `${type}:${String(data.trxId ?? data.refundUid ?? data.payoutUid ?? '')}`);
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
      while (this.paymentsHandler.pendingConfirmations > 0 || !this.deliverer.quiet) {
        if (Date.now() > deadline) {
          const pending = this.deliverer.states.filter((d) => d.state !== 'delivered' && d.state !== 'abandoned' && d.state !== 'no-url');
          throw new Error(
            `Simulator still busy after ${opts.timeoutMs} ms: ${this.paymentsHandler.pendingConfirmations} confirmation(s), ` +
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
      this.answer(res, record, errorAnswer(new SimulatorHttpError('PAYLOAD_TOO_LARGE')), true);
      return;
    }
    if (raw === 'aborted') return;
    record.body = describeBody(raw);

    this.router.catchUp();
    const fault = this.takeFault(method, route, parsed.pathname, mode);
    if (fault && !fault.afterHandling) {
      this.applyFault(res, record, fault);
      return;
    }
    let response: SimulatorAnswer;
    try {
      if (!mode) throw new SimulatorHttpError('NOT_FOUND');
      response = this.router.route({ method, route, mode, query: record.query, headers: req.headers, raw, ip: req.socket.remoteAddress ?? '' });
    } catch (err) {
      response = errorAnswer(err);
    }
    if (fault) {
      this.applyFault(res, record, fault);
      return;
    }
    this.answer(res, record, response);
  }

  private answer(res: ServerResponse, record: SimulatorRequestRecord, response: SimulatorAnswer, close = false): void {
    record.status = response.status;
    const body = response.body as { status?: string; code?: string } | undefined;
    if (body?.status === 'error') record.code = body.code;
    write(res, response, close);
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
    this.answer(res, record, errorAnswer(err));
  }
}

/** A copy the caller may keep or change without touching the simulator's state. */
function copyPayment(p: SimulatedPayment): SimulatedPayment {
  return { ...p, splits: p.splits.map((s) => ({ ...s })) };
}

function write(res: ServerResponse, response: SimulatorAnswer, close = false): void {
  const text = JSON.stringify(response.body);
  res.writeHead(response.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
    ...response.headers,
  });
  res.end(text);
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
