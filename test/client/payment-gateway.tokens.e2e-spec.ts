import 'reflect-metadata';
import { PaymentAuthenticationError } from '../../lib/client/payment-api.errors.js';
import { startClientHarness, rejectionOf, type ClientHarness } from '../support/client-simulator.js';

const TOKEN = '/authentication/token';
const bearer = (r: { headers: Record<string, unknown> }) => String(r.headers.authorization);

describe('PaymentGatewayService tokens (against the simulator)', () => {
  let h: ClientHarness;
  afterEach(async () => h?.close());

  it("gets its tokens from a simulator given the same tokenRequest (form-encoded, renamed fields); one left at JSON is refused like a form-reading service would", async () => {
    const tokenRequest = { clientIdField: 'username', clientSecretField: 'password', encoding: 'form' } as const;
    h = await startClientHarness({ tokenRequest }, { tokenRequest });
    await expect(h.client.listGateways()).resolves.toEqual(expect.any(Array));
    expect(h.calls(TOKEN)[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    await h.close();
    h = await startClientHarness({ maxRetries: 0 }, { tokenRequest });
    expect(await rejectionOf(h.client.listGateways())).toMatchObject({ code: 'PAY_4000', errors: { body: expect.any(Array) } });
  });

  it('creates a payment: amounts sent with 8 decimals, generated idempotency key, 200 → pending false', async () => {
    h = await startClientHarness();
    const payment = await h.client.createPayment({ amount: '12.5', currency: 'USD', custom: 'order-1', country: 'BD' });
    expect(payment).toMatchObject({ status: 'PENDING', pending: false, httpStatus: 200, custom: 'order-1', amount: '12.50000000' });
    expect(payment.trxId).toEqual(expect.any(String));
    expect(payment.token).toEqual(expect.any(String));
    expect(payment.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    const [create] = h.calls('/payment/create');
    expect(create.body).toMatchObject({ amount: '12.50000000', currency: 'USD', idempotency_key: payment.idempotencyKey, country: 'BD' });
  });

  it('answers pending: true when the service accepts a payment with 202', async () => {
    h = await startClientHarness();
    h.sim.scriptNextPayment('pending-then-succeed');
    const payment = await h.client.createPayment({ amount: 5, currency: 'EUR' }, { idempotencyKey: 'order-202' });
    expect(payment.pending).toBe(true);
    expect(payment.httpStatus).toBe(202);
    expect(payment.idempotencyKey).toBe('order-202');
  });

  it('requests a new token before each payment; reads reuse the cached token', async () => {
    h = await startClientHarness();
    const p1 = await h.client.createPayment({ amount: '1', currency: 'USD' });
    const p2 = await h.client.createPayment({ amount: '2', currency: 'USD' });
    const p3 = await h.client.createPayment({ amount: '3', currency: 'USD' });
    expect(h.calls(TOKEN)).toHaveLength(3);
    const creates = h.calls('/payment/create');
    expect(new Set(creates.map(bearer)).size).toBe(3);

    for (const p of [p1, p2, p3]) expect((await h.client.getPaymentStatus(p.trxId!)).trxId).toBe(p.trxId);
    await h.client.listGateways();
    expect(h.calls(TOKEN)).toHaveLength(3);
    // reads use the newest token
    expect(new Set(h.calls(/^\/payment(s\/gateways|\/status)$/).map(bearer))).toEqual(new Set([bearer(creates[2])]));
  });

  it('concurrent callers share one in-flight token request', async () => {
    h = await startClientHarness();
    const gateways = await Promise.all(Array.from({ length: 10 }, () => h.client.listGateways()));
    expect(gateways.every((g) => Array.isArray(g) && g.length > 0)).toBe(true);
    expect(h.calls(TOKEN)).toHaveLength(1);
  });

  it('reuses a token until one minute before its 10-minute expiry, then gets a new one', async () => {
    h = await startClientHarness();
    await h.client.listGateways();
    h.sim.advanceTime(8 * 60_000);
    await h.client.listGateways();
    expect(h.calls(TOKEN)).toHaveLength(1);
    h.sim.advanceTime(60_000 + 1_000); // 9 min 1 s: inside the refresh margin
    await h.client.listGateways();
    expect(h.calls(TOKEN)).toHaveLength(2);
    expect(h.calls('/payments/gateways').every((r) => r.status === 200)).toBe(true);
  });

  it("a token whose request waited for its slot is reused for its lifetime from when it was sent, not from when it was asked for", async () => {
    h = await startClientHarness({ rateLimits: { tokenPerMinute: 1 } });
    const start = h.sim.now();
    await h.client.createPayment({ amount: '1', currency: 'USD' });
    // its own fresh token waits a minute for the token slot, then is sent
    await h.client.createPayment({ amount: '2', currency: 'USD' });
    const tokenCalls = h.calls(TOKEN);
    expect(tokenCalls).toHaveLength(2);
    expect(h.sim.now() - start).toBeGreaterThanOrEqual(60_000);
    // 9 min 30 s after the first token was asked for: the second (sent a minute later) is still good
    h.sim.advanceTime(start + 570_000 - h.sim.now());
    await h.client.listGateways();
    expect(h.calls(TOKEN)).toHaveLength(2);
  });

  it('on PAY_1003 (expired) gets a fresh token and retries once', async () => {
    // the client believes tokens live an hour, the service expires them after 10 minutes
    h = await startClientHarness({ tokenResponse: { expiresInField: 'absent', defaultExpiresInSeconds: 3600 } });
    await h.client.listGateways();
    h.sim.advanceTime(11 * 60_000);
    await expect(h.client.listGateways()).resolves.toEqual(expect.any(Array));
    expect(h.calls('/payments/gateways').map((r) => r.code ?? r.status)).toEqual([200, 'PAY_1003', 200]);
    expect(h.calls(TOKEN)).toHaveLength(2);
  });

  it('on PAY_1002 gets a fresh token and retries once, also for a refund', async () => {
    h = await startClientHarness();
    h.sim.scriptNextPayment('succeed');
    const payment = await h.client.createPayment({ amount: '10', currency: 'USD' });
    await h.client.listGateways();
    h.sim.injectFault({ path: /\/refund$/, kind: 'status', code: 'PAY_1002' });
    const refund = await h.client.refundPayment(payment.trxId!, { amount: '4' });
    expect(refund.refundUid).toEqual(expect.any(String));
    expect(h.calls(/\/refund$/).map((r) => r.code ?? r.status)).toEqual(['PAY_1002', 201]);
    expect(h.sim.refunds).toHaveLength(1);
  });

  it.each([
    ['a refund', 500, 'PAY_1003'],
    ['a refund', 502, 'PAY_1002'],
    ['a payout', 503, 'PAY_1003'],
  ])('%s the service carried out, answered %s with the token code %s, is not sent again with a new token', async (kind, status, code) => {
    h = await startClientHarness();
    let call: Promise<unknown>;
    if (kind === 'a refund') {
      h.sim.scriptNextPayment('succeed');
      const payment = await h.client.createPayment({ amount: '10', currency: 'USD' });
      h.sim.injectFault({ path: /\/refund$/, kind: 'status', status, code, afterHandling: true });
      call = h.client.refundPayment(payment.trxId!, { amount: '4' });
    } else {
      h.sim.injectFault({ path: '/payout', method: 'POST', kind: 'status', status, code, afterHandling: true });
      call = h.client.createPayout({ amount: '4', currency: 'USD', recipient: { account_number: '0123456789' } });
    }
    // a 5xx says nothing of what the service did: only a 401/403 token refusal proves it did nothing
    expect(await rejectionOf(call)).toMatchObject({ code, httpStatus: status, mayHaveReachedService: true });
    expect(h.sim.refunds.length + h.sim.payouts.length).toBe(1);
  });

  it('a token that cannot go in a header (a line break) is UNEXPECTED_RESPONSE on the token call, never a request said to have reached the service', async () => {
    h = await startClientHarness();
    h.sim.injectFault({ path: '/authentication/token', kind: 'rewrite', rewrite: (body) => ({ body: { ...body, data: { access_token: 'tok\r\nX-Evil: 1', expires_in: 600 } } }) });
    const error = await rejectionOf(h.client.listGateways());
    // was NETWORK_ERROR with mayHaveReachedService: true (Node refused the header before sending)
    expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE', mayHaveReachedService: false });
    expect(error.message).toContain('cannot be sent in an Authorization header');
    expect(error.message).not.toContain('X-Evil');
    expect(h.calls('/payments/gateways')).toHaveLength(0);
  });

  it('retries a rejected token only once', async () => {
    h = await startClientHarness();
    h.sim.injectFault({ path: '/payments/gateways', kind: 'status', code: 'PAY_1003', times: 5 });
    const error = await rejectionOf(h.client.listGateways());
    expect(error).toBeInstanceOf(PaymentAuthenticationError);
    expect(error.code).toBe('PAY_1003');
    expect(h.calls('/payments/gateways')).toHaveLength(2);
  });
});
