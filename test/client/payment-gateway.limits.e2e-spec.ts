import 'reflect-metadata';
import { PaymentRateLimitError } from '../../lib/client/payment-api.errors.js';
import { startClientHarness, type ClientHarness } from '../support/client-simulator.js';

const TOKEN = '/authentication/token';
const recipient = { account_number: '0123456789' };

/**
 * The simulator enforces spec 8 with 429s. The client's clock is the simulator's, so
 * its queue "waits" by moving service time forward: a minute passes instantly.
 */
describe('PaymentGatewayService client-side rate limits (against the simulator)', () => {
  let h: ClientHarness;
  afterEach(async () => h?.close());

  it('a burst of 100 status calls completes with zero 429 answers, without a listener-leak warning', async () => {
    h = await startClientHarness();
    const payment = await h.client.createPayment({ amount: '1', currency: 'USD' });
    const results = await Promise.all(Array.from({ length: 100 }, () => h.client.getPaymentStatus(payment.trxId!)));
    // each queued call listens on the client's shutdown signal: Node warned past 10 listeners ("possible
    // EventTarget memory leak"), and records on the signal that it did (jest's process object does not see the warning)
    const shutdown = (h.client as unknown as { executor: { closing: AbortController } }).executor.closing.signal;
    const warned = Object.getOwnPropertySymbols(shutdown).find((key) => key.description === 'events.maxEventTargetListenersWarned');
    expect(warned && (shutdown as unknown as Record<symbol, unknown>)[warned]).toBe(false);
    expect(results.every((r) => r.trxId === payment.trxId)).toBe(true);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
    expect(h.calls('/payment/status').filter((r) => r.status === 200)).toHaveLength(100);
    // the queue really held requests back for a window (spec: 60 reads per minute per token)
    expect(h.clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(60_000);
  });

  it('the same burst without the client-side queue gets 429s (the simulator enforces the limit)', async () => {
    h = await startClientHarness({ rateLimits: false, maxRetries: 0 });
    const payment = await h.client.createPayment({ amount: '1', currency: 'USD' });
    const outcomes = await Promise.allSettled(Array.from({ length: 100 }, () => h.client.getPaymentStatus(payment.trxId!)));
    const rejected = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected.every((o) => o.reason instanceof PaymentRateLimitError)).toBe(true);
  });

  it('more than 10 payments a minute queue on the token limit instead of failing', async () => {
    h = await startClientHarness();
    const payments = await Promise.all(Array.from({ length: 14 }, (_, i) => h.client.createPayment({ amount: String(i + 1), currency: 'USD' })));
    expect(new Set(payments.map((p) => p.trxId)).size).toBe(14);
    expect(h.calls(TOKEN)).toHaveLength(14);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('a read queued behind 20 payment creations on the token line takes the first token one of them caches, asking none of its own', async () => {
    h = await startClientHarness();
    const creations = Promise.all(Array.from({ length: 20 }, (_, i) => h.client.createPayment({ amount: String(i + 1), currency: 'USD' })));
    // the service's clock jumps a window whenever the line waits: count the token calls instead
    let tokenCallsBeforeRead = -1;
    const read = h.client.listGateways().then(() => (tokenCallsBeforeRead = h.calls(TOKEN).length));
    await Promise.all([creations, read]);
    // before, it waited for a 21st token call of its own at the back of the line, two windows later
    expect(h.calls(TOKEN)).toHaveLength(20);
    expect(tokenCallsBeforeRead).toBeGreaterThan(0);
    expect(tokenCallsBeforeRead).toBeLessThan(20);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('more than 30 payouts a minute queue on the per-client money-movement limit', async () => {
    h = await startClientHarness();
    const payouts = await Promise.all(
      Array.from({ length: 35 }, () => h.client.createPayout({ amount: '1', currency: 'USD', recipient })),
    );
    expect(payouts).toHaveLength(35);
    expect(h.sim.payouts).toHaveLength(35);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('limits come from options (small limits, still zero 429 from a server with the same limits)', async () => {
    const small = { tokenPerMinute: 2, createPaymentPerMinute: 1, readsPerMinute: 3, moneyMovementPerMinute: 2 };
    h = await startClientHarness({ rateLimits: small }, { rateLimits: small });
    const payment = await h.client.createPayment({ amount: '1', currency: 'USD' });
    await Promise.all(Array.from({ length: 10 }, () => h.client.getPaymentStatus(payment.trxId!)));
    await Promise.all(Array.from({ length: 3 }, () => h.client.getPayout('pyo_missing').catch(() => undefined)));
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('subaccount calls through request() count in the 30/min refunds-and-payouts limit, GETs included', async () => {
    h = await startClientHarness();
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => h.client.request<Array<{ subaccountId: string }>>({ method: 'GET', path: '/subaccounts' })),
    );
    expect(answers.every((a) => a.httpStatus === 200 && Array.isArray(a.data))).toBe(true);
    expect(h.calls('/subaccounts').filter((r) => r.status === 200)).toHaveLength(40);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
    // the queue held 10 of them for a window: they were not counted as reads (60/min)
    expect(h.clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(60_000);
  });

  it('subaccount calls share the bucket of refunds and payouts; an explicit scope wins', async () => {
    const small = { moneyMovementPerMinute: 2 };
    h = await startClientHarness({ rateLimits: small, maxRetries: 0 }, { rateLimits: small });
    await h.client.createPayout({ amount: '1', currency: 'USD', recipient });
    await h.client.request({ method: 'GET', path: '/subaccounts' });
    expect(h.clock.sleeps).toEqual([]);
    // the bucket is full (one payout, one subaccount read): the next subaccount call waits a window
    await h.client.request({ method: 'GET', path: '/subaccounts' });
    expect(h.clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(55_000);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);

    // scope 'read' counts it as a read instead: no client-side wait, so the service refuses it
    await h.client.createPayout({ amount: '1', currency: 'USD', recipient });
    const sleptBefore = h.clock.sleeps.length;
    const error = await h.client.request({ method: 'GET', path: '/subaccounts', scope: 'read' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentRateLimitError);
    expect(h.clock.sleeps).toHaveLength(sleptBefore);
  });

  it('a refund or payout lookup through request() counts with refunds and payouts, as getRefund and getPayout do', async () => {
    const small = { moneyMovementPerMinute: 2 };
    h = await startClientHarness({ rateLimits: small, maxRetries: 0 }, { rateLimits: small });
    const payout = await h.client.createPayout({ amount: '1', currency: 'USD', recipient });
    await h.client.request({ method: 'GET', path: `/payout/${payout.payoutUid}` });
    expect(h.clock.sleeps).toEqual([]);
    // the bucket is full: the next lookup waits a window instead of meeting the service's 429
    await h.client.request({ method: 'GET', path: `/payout/${payout.payoutUid}` });
    expect(h.clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(55_000);
    expect(h.sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('a payment created through request() is a payment creation: a new token each time, its own limit (spec 5)', async () => {
    h = await startClientHarness({ rateLimits: { moneyMovementPerMinute: 1 } });
    const body = (i: number) => ({ amount: `${i}.00000000`, currency: 'USD', idempotency_key: `req-create-${i}` });
    for (let i = 1; i <= 3; i++) await h.client.request({ method: 'POST', path: '/payment/create', body: body(i), idempotent: true });
    // a new token before each payment; and not counted with refunds and payouts (limit 1 a minute here)
    expect(h.calls(TOKEN)).toHaveLength(3);
    expect(new Set(h.calls('/payment/create').map((r) => r.headers.authorization)).size).toBe(3);
    expect(h.clock.sleeps).toEqual([]);
  });

  it('endpoints.subaccountPrefix says which paths are subaccount operations', async () => {
    const small = { moneyMovementPerMinute: 1 };
    h = await startClientHarness({ rateLimits: small, maxRetries: 0, endpoints: { subaccountPrefix: '/merchant/subaccounts' } }, { rateLimits: small });
    await h.client.request({ method: 'GET', path: '/subaccounts' });
    await h.client.request({ method: 'GET', path: '/subaccounts' }).catch(() => undefined); // now a plain read: not queued
    expect(h.clock.sleeps).toEqual([]);
    expect(h.calls('/subaccounts').map((r) => r.status)).toEqual([200, 429]);
  });

  it('uses one keep-alive connection for sequential calls', async () => {
    h = await startClientHarness();
    for (let i = 0; i < 20; i++) await h.client.listGateways();
    expect(h.calls('/payments/gateways')).toHaveLength(20);
    expect(h.sim.connectionCount).toBeLessThanOrEqual(2);
  });

  // the window counts requests the service saw: a call given up before its request left holds no slot
  it.each([
    ['aborted while it waited for its token', true],
    ['whose token could not be had', false],
  ])('a call %s gives its slot back uncounted: the next call in its bucket does not wait a window', async (_, aborted) => {
    h = await startClientHarness({ rateLimits: { readsPerMinute: 1 }, httpTimeoutMs: 800 });
    const controller = new AbortController();
    if (aborted) h.sim.injectFault({ kind: 'stall', path: TOKEN, times: 1 });
    else h.sim.injectFault({ kind: 'status', path: TOKEN, status: 401, times: 1 });
    const first = h.client.listGateways({ signal: controller.signal });
    if (aborted) {
      await new Promise((resolve) => setTimeout(resolve, 100)); // its slot granted, its token call stalled
      controller.abort();
    }
    await expect(first).rejects.toThrow();
    expect(h.calls('/payments/gateways')).toHaveLength(0);
    const before = h.sim.now();
    await h.client.listGateways();
    // before, it waited the whole minute for the slot of a request that never went out
    expect(h.sim.now() - before).toBeLessThan(60_000);
  });

  it('a 429 that slips through (e.g. another process shares the IP) is waited out, not failed', async () => {
    h = await startClientHarness();
    h.sim.injectFault({ path: TOKEN, kind: 'status', status: 429, retryAfterSeconds: 30 });
    await h.client.listGateways();
    expect(h.clock.sleeps).toContain(30_000);
    expect(h.calls(TOKEN).map((r) => r.status)).toEqual([429, 200]);
  });
});
