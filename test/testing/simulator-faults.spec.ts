import { request } from 'node:http';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { paymentBody, simCall, simToken } from '../support/simulator-http.js';

/** A raw request that reports how it ended (answer, reset, or our own time-out). */
function rawPost(url: string, body: string, timeoutMs: number): Promise<{ status?: number; error?: string }> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode }));
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      resolve({ error: 'timeout' });
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(body);
  });
}

describe('PaymentServiceSimulator rate limits', () => {
  let sim: PaymentServiceSimulator;
  afterEach(() => sim.stop());

  it('enforces the spec 8 token limit per IP with 429 + Retry-After, freed by the clock', async () => {
    sim = new PaymentServiceSimulator();
    await sim.start();
    for (let i = 0; i < 10; i++) await simToken(sim);
    const r = await simCall(sim, 'POST', '/authentication/token', {
      body: { client_id: 'sandbox-client', client_secret: 'sandbox-secret' },
    });
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ status: 'error', code: 'RATE_LIMITED', message: expect.any(String), errors: {}, data: [] });
    const retryAfter = Number(r.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    sim.advanceTime(retryAfter * 1000);
    expect((await simCall(sim, 'POST', '/authentication/token', { body: { client_id: 'sandbox-client', client_secret: 'sandbox-secret' } })).status).toBe(200);
  });

  it('counts creates and reads per token, money movement per client id (configurable limits)', async () => {
    sim = new PaymentServiceSimulator({
      // a frozen clock makes Retry-After exact
      now: () => 1_700_000_000_000,
      rateLimits: { createPaymentPerMinute: 2, readsPerMinute: 3, moneyMovementPerMinute: 1 },
      merchants: [
        { merchantId: 1, clientId: 'c', clientSecret: 's', webhookSecret: 'w', mode: 'sandbox', walletBalance: '100' },
      ],
    });
    await sim.start();
    const creds = { clientId: 'c', clientSecret: 's' };
    const t1 = await simToken(sim, creds);
    const t2 = await simToken(sim, creds);
    for (let i = 0; i < 2; i++) expect((await simCall(sim, 'POST', '/payment/create', { token: t1, body: paymentBody() })).status).toBe(200);
    expect((await simCall(sim, 'POST', '/payment/create', { token: t1, body: paymentBody() })).status).toBe(429);
    expect((await simCall(sim, 'POST', '/payment/create', { token: t2, body: paymentBody() })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await simCall(sim, 'GET', '/payments/gateways', { token: t1 })).status).toBe(200);
    expect((await simCall(sim, 'GET', '/payments/gateways', { token: t1 })).status).toBe(429);
    const recipient = { account_number: '1' };
    expect((await simCall(sim, 'POST', '/payout', { token: t1, body: { amount: '1', currency: 'USD', recipient } })).status).toBe(201);
    // a second token of the same client id shares the money-movement window
    const limited = await simCall(sim, 'POST', '/payout', { token: t2, body: { amount: '1', currency: 'USD', recipient } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect(sim.payouts).toHaveLength(1);
  });

  it('resetRateLimits() frees every window', async () => {
    sim = new PaymentServiceSimulator({ rateLimits: { tokenPerMinute: 1 } });
    await sim.start();
    await simToken(sim);
    await expect(simToken(sim)).rejects.toThrow(/429/);
    sim.resetRateLimits();
    await simToken(sim);
  });

  it('can be switched off', async () => {
    sim = new PaymentServiceSimulator({ rateLimits: false });
    await sim.start();
    for (let i = 0; i < 15; i++) await simToken(sim);
  });
});

describe('PaymentServiceSimulator faults, request log, connections', () => {
  let sim: PaymentServiceSimulator;
  beforeEach(async () => {
    sim = new PaymentServiceSimulator();
    await sim.start();
  });
  afterEach(() => sim.stop());

  it('answers an injected status with the error envelope, `times` times, on the matching call only', async () => {
    const token = await simToken(sim);
    sim.injectFault({ method: 'POST', path: '/payment/create', kind: 'status', status: 503, times: 2 });
    expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(200);
    const body = paymentBody();
    const a = await simCall(sim, 'POST', '/payment/create', { token, body });
    expect(a.status).toBe(503);
    expect(a.body).toEqual({ status: 'error', code: 'SERVICE_UNAVAILABLE', message: expect.any(String), errors: {}, data: [] });
    expect((await simCall(sim, 'POST', '/payment/create', { token, body })).status).toBe(503);
    expect((await simCall(sim, 'POST', '/payment/create', { token, body })).status).toBe(200);
    expect(sim.payments).toHaveLength(1);
  });

  it('matches a fault by the full path and by environment too', async () => {
    const token = await simToken(sim);
    sim.injectFault({ path: '/sandbox/api/v1/payments/gateways', kind: 'status', status: 500 });
    sim.injectFault({ mode: 'live', kind: 'status', status: 502 });
    expect((await simCall(sim, 'GET', '/payments/gateways', { token, mode: 'live' })).status).toBe(502);
    expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(500);
    expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(200);
  });

  it('injects 429 with Retry-After and spec codes with their status', async () => {
    const token = await simToken(sim);
    sim.injectFault({ path: /^\/payment\/status/, kind: 'status', status: 429, retryAfterSeconds: 3 });
    sim.injectFault({ path: '/payments/gateways', kind: 'status', code: 'PAY_5001' });
    const r = await simCall(sim, 'GET', '/payment/status?trx_id=x', { token });
    expect([r.status, r.body.code, r.headers.get('retry-after')]).toEqual([429, 'RATE_LIMITED', '3']);
    const g = await simCall(sim, 'GET', '/payments/gateways', { token });
    expect([g.status, g.body.code]).toEqual([500, 'PAY_5001']);
  });

  it('resets the connection, before or after handling', async () => {
    const token = await simToken(sim);
    sim.injectFault({ path: '/payment/create', kind: 'reset' });
    await expect(simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() })).rejects.toThrow();
    expect(sim.payments).toHaveLength(0);

    sim.injectFault({ path: '/payment/create', kind: 'reset', afterHandling: true });
    const body = paymentBody();
    await expect(simCall(sim, 'POST', '/payment/create', { token, body })).rejects.toThrow();
    expect(sim.payments).toHaveLength(1);
    // the retry with the same key finds the payment the lost answer described
    const retry = await simCall(sim, 'POST', '/payment/create', { token, body });
    expect(retry.body.data.trxId).toBe(sim.payments[0].trxId);
    expect(sim.payments).toHaveLength(1);
    expect(sim.requests.filter((r) => r.route === '/payment/create').map((r) => r.fault ?? r.status)).toEqual(['reset', 'reset', 200]);
  });

  it('answers a status after handling (the refund happened, the answer says 500)', async () => {
    const token = await simToken(sim);
    sim.scriptNextPayment('succeed');
    const trxId = (await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() })).body.data.trxId;
    sim.injectFault({ path: /\/refund$/, kind: 'status', status: 500, afterHandling: true });
    const r = await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: {} });
    expect(r.status).toBe(500);
    expect(sim.refunds).toHaveLength(1);
  });

  it('stalls a call until the client gives up; stop() still closes promptly', async () => {
    sim.injectFault({ path: '/authentication/token', kind: 'stall' });
    const r = await rawPost(`${sim.apiUrl()}/authentication/token`, '{}', 200);
    expect(r).toEqual({ error: 'timeout' });
    sim.injectFault({ path: '/authentication/token', kind: 'stall' });
    const pending = rawPost(`${sim.apiUrl()}/authentication/token`, '{}', 20_000);
    while (!sim.requests.some((x, i) => i > 0 && x.fault === 'stall')) await new Promise((res) => setTimeout(res, 5));
    await sim.stop();
    expect((await pending).error).toBeDefined();
  });

  it('a global or sticky RegExp path matches every request, not every other one', async () => {
    const token = await simToken(sim);
    sim.injectFault({ path: /\/gateways$/g, kind: 'status', status: 503, times: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await simCall(sim, 'GET', '/payments/gateways', { token })).status);
    expect(statuses).toEqual([503, 503, 503, 200]);
  });

  it('a RegExp path is tried on the route only: one written for the whole path throws (it waited for ever), a negation keeps its meaning', async () => {
    for (const path of [/^\/sandbox\/api\/v1\/payments\/gateways$/, /\/api\/v1\/payment\/create/, new RegExp('/api/v1/payout')]) {
      expect(() => sim.injectFault({ path, kind: 'status', status: 503 })).toThrow(/is tried on the route only.*the part after \/api\/v1/);
    }
    const token = await simToken(sim);
    // "every route but payment creation": the whole path, which also does not equal the route, is never tried
    sim.injectFault({ path: /^(?!\/payment\/create$)/, kind: 'status', status: 503 });
    expect((await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() })).status).toBe(200);
    expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(503);
  });

  it('a script with a bad outcome queues nothing (its good outcomes were left for the next payments)', async () => {
    expect(() => sim.scriptNextPayment('fail', 'bogus' as never)).toThrow(/Unknown payment outcome "bogus"/);
    const token = await simToken(sim);
    const created = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() });
    // the default of a payment nobody scripted, not the 'fail' of the refused call
    expect(sim.payment((created.body as { data: { trxId: string } }).data.trxId)?.outcome).toBe('manual');
  });

  it("refuses a status fault's code the simulator does not know unless its status is given (PAY_2OO1 was a 500 with the typo as message)", () => {
    expect(() => sim.injectFault({ kind: 'status', code: 'PAY_2OO1' })).toThrow(/fault.code "PAY_2OO1" is not a code the simulator knows.*PAY_2001/s);
    // with a status, any code is the test's own (a code a newer service might send)
    expect(() => sim.injectFault({ kind: 'status', status: 409, code: 'PAY_9999' })).not.toThrow();
    expect(() => sim.injectFault({ kind: 'status', code: 'PAY_2001' })).not.toThrow();
  });

  it('refuses control arguments that would silently do nothing', () => {
    expect(() => sim.setMerchantActive(1, 'false' as never)).toThrow(TypeError);
    expect(() => sim.scriptNextPayment('success' as never)).toThrow(/Unknown payment outcome "success"; known: manual, succeed, /);
    expect(() => sim.injectFault({ method: 'get' as never, kind: 'status', status: 500 })).toThrow(/fault.method "get" is unknown/);
    // a string path is the route as requested: without its '/', or with a query, it never matches
    expect(() => sim.injectFault({ kind: 'reset', path: 'payment/create' })).toThrow(/fault.path "payment\/create" can never match/);
    expect(() => sim.injectFault({ kind: 'status', status: 503, path: '/payment/status?trx_id=trx_1' })).toThrow(/can never match/);
    expect(() => sim.injectFault({ kind: 'status', status: 503, path: '/sandbox/api/v1/payment/status' })).not.toThrow();
    // nor does part of a route, one no endpoint has, or an id placeholder: those are a RegExp's job
    for (const path of ['/refund', '/create', '/payment/:trxId/refund', '/payment/{trxId}/refund', '/api/v1/refund']) {
      expect(() => sim.injectFault({ kind: 'status', status: 503, path })).toThrow(/can never match.*with the real id.*give a RegExp/);
    }
    // a path the simulator does not serve may still be asked for (a fault is taken before routing)
    for (const path of ['/payment/trx_1/refund', '/refund/rfd_1', '/payout/po_1', '/payout', '/api/v1/payment/create', '/authentication/token', '/payments/create', '/disputes']) {
      expect(() => sim.injectFault({ kind: 'status', status: 503, path })).not.toThrow();
    }
    sim.clearFaults();
    expect(() => sim.injectFault({ kind: 'status', status: 429, retryAfterSeconds: Number.NaN })).toThrow(RangeError);
    expect(() => sim.setDeliveryFaults({ outOfOrdr: true } as never)).toThrow(/unknown switch "outOfOrdr"/);
    expect(() => sim.setDeliveryFaults({ duplicate: -1 })).toThrow(RangeError);
    expect(() => sim.setDeliveryFaults({ outOfOrder: 'yes' as never })).toThrow(TypeError);
    // past the last date JavaScript can show, every call would be a bare 500
    for (const ms of [8.64e15, 1e20]) expect(() => sim.advanceTime(ms)).toThrow(/past the last date JavaScript can represent/);
    expect(() => sim.advanceTime(-1)).toThrow(RangeError);
  });

  it('refuses a fault that would match nothing or ignore a field: unknown keys, modes, path types, fields of another kind', () => {
    expect(() => sim.injectFault({ kind: 'status', status: 503, time: 3 } as never)).toThrow(/fault key 'time' is unknown; did you mean 'times'\?/);
    // a key cut short is found too, and with no near key the known ones are listed
    expect(() => sim.injectFault({ kind: 'status', status: 429, retryAfter: 3 } as never)).toThrow(/'retryAfter' is unknown; did you mean 'retryAfterSeconds'\?/);
    expect(() => sim.injectFault({ kind: 'status', status: 429, delay: 3 } as never)).toThrow(/'delay' is unknown; known: method, path, /);
    expect(() => sim.injectFault({ kind: 'status', mode: 'production' as never })).toThrow(/fault.mode "production" is unknown/);
    expect(() => sim.injectFault({ kind: 'status', path: 42 as never })).toThrow(/fault.path must be a string or a RegExp \(not 42\)/);
    expect(() => sim.injectFault({ kind: 'reset', status: 503 })).toThrow(/fault.status only applies to kind 'status', not 'reset'/);
    expect(() => sim.injectFault({ kind: 'stall', afterHandling: 'yes' as never })).toThrow(/afterHandling must be true or false/);
    expect(() => sim.injectFault(null as never)).toThrow(/the fault must be an object/);
  });

  it('a path starting with // is not read as a host: 404, not another environment', async () => {
    const r = await fetch(`${sim.url}//sandbox/api/v1/authentication/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: 'sandbox-client', client_secret: 'sandbox-secret' }),
    });
    expect(r.status).toBe(404);
    expect(((await r.json()) as { code?: string }).code).toBe('NOT_FOUND');
  });

  it('a sim:<outcome> tag followed by a hyphen still scripts the payment', async () => {
    const token = await simToken(sim);
    const r = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ custom: 'sim:fail-order-7' }) });
    expect(r.status).toBeLessThan(300);
    expect(sim.payments[0]).toMatchObject({ outcome: 'fail' });
  });

  it('port 0 (any free port) restarts on the port it got first, so the app still reaches it', async () => {
    const own = new PaymentServiceSimulator({ port: 0 });
    try {
      await own.start();
      const first = own.url;
      await own.stop();
      await own.start();
      expect(own.url).toBe(first);
    } finally {
      await own.stop();
    }
  });

  it('logs every request with headers, body, status and clock time', async () => {
    sim.advanceTime(5_000);
    const token = await simToken(sim);
    const body = paymentBody();
    await simCall(sim, 'POST', '/payment/create', { token, body });
    const [tok, create] = sim.requests;
    expect(tok).toMatchObject({ method: 'POST', path: '/sandbox/api/v1/authentication/token', route: '/authentication/token', mode: 'sandbox', status: 200 });
    expect(create).toMatchObject({
      method: 'POST',
      route: '/payment/create',
      status: 200,
      body,
      headers: expect.objectContaining({ authorization: `Bearer ${token}` }),
    });
    expect(create.at).toBeGreaterThanOrEqual(Date.now() + 4_000);
    const bad = await simCall(sim, 'GET', '/payment/status?trx_id=nope', { token });
    expect(sim.requests.at(-1)).toMatchObject({ query: { trx_id: 'nope' }, status: 404, code: 'PAY_2001' });
    expect(bad.status).toBe(404);
    sim.clearRequests();
    expect(sim.requests).toHaveLength(0);
  });

  it('counts TCP connections (keep-alive reuse shows as one)', async () => {
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (): Promise<number> =>
      new Promise((resolve, reject) => {
        request(`${sim.apiUrl()}/payments/gateways`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
          .on('error', reject)
          .end();
      });
    const before = sim.connectionCount;
    for (let i = 0; i < 5; i++) expect(await get()).toBe(401);
    expect(sim.connectionCount - before).toBe(1);
    agent.destroy();
    for (let i = 0; i < 2; i++) await rawPost(`${sim.apiUrl()}/authentication/token`, '{}', 5_000);
    expect(sim.connectionCount - before).toBe(3);
  });
});
