import { connect } from 'node:net';
import { PAYMENT_EVENT_TYPES } from '../../lib/events/payment-event.types.js';
import { PAYMENT_OUTCOMES, PaymentServiceSimulator, SIMULATED_GATEWAYS, SIMULATOR_ERROR_TABLE, SPEC_RETRY_DELAYS_MS } from '../../lib/testing/index.js';
import { paymentBody, simCall, simToken } from '../support/simulator-http.js';
import { WebhookReceiver } from '../support/simulator-receiver.js';
import { sleep, waitFor } from '../support/wait.js';

const LIVE = {
  merchantId: 2,
  clientId: 'live-client',
  clientSecret: 'live-secret',
  webhookSecret: 'whsec_live',
  mode: 'live' as const,
  walletBalance: '50',
};
const SANDBOX = {
  merchantId: 1,
  clientId: 'sandbox-client',
  clientSecret: 'sandbox-secret',
  webhookSecret: 'whsec_sandbox',
  mode: 'sandbox' as const,
  walletBalance: '100',
  subaccounts: [{ subaccountId: 'sub-a' }],
};

function expectError(r: { status: number; body: any }, status: number, code: string): void {
  expect({ status: r.status, code: r.body?.code }).toEqual({ status, code });
  expect(r.body).toEqual({ status: 'error', code, message: expect.any(String), errors: expect.any(Object), data: [] });
}

describe('PaymentServiceSimulator API', () => {
  let sim: PaymentServiceSimulator;

  beforeEach(async () => {
    sim = new PaymentServiceSimulator({ merchants: [SANDBOX, LIVE] });
    await sim.start();
  });
  afterEach(() => sim.stop());

  it('refuses option typos that would silently change its behaviour, and bad arguments of its control methods', async () => {
    expect(() => new PaymentServiceSimulator({ defaultOutcome: 'succeeed' as never })).toThrow(/defaultOutcome "succeeed" is unknown/);
    expect(() => new PaymentServiceSimulator({ rateLimits: { readsPerMinute: Number.NaN } })).toThrow(/rateLimits.readsPerMinute/);
    expect(() => new PaymentServiceSimulator({ rateLimits: { tokensPerMinute: 5 } as never })).toThrow(/rateLimits.tokensPerMinute is unknown/);
    expect(() => new PaymentServiceSimulator({ merchants: [{ ...LIVE, mode: 'production' as never }] })).toThrow(/mode must be 'sandbox' or 'live'/);
    expect(() => new PaymentServiceSimulator({ merchants: [{ ...SANDBOX, webhookUrl: 'localhost:3000/hook' }] })).toThrow(/webhook URL/);
    expect(() => new PaymentServiceSimulator({ tokenRequest: { encodng: 'form' } as never })).toThrow(/tokenRequest.encodng is unknown; did you mean 'encoding'\?/);
    expect(() => new PaymentServiceSimulator({ tokenRequest: { encoding: 'xml' as never } })).toThrow(/tokenRequest.encoding must be 'json' or 'form'/);
    expect(() => new PaymentServiceSimulator({ tokenRequest: { clientIdField: '' } })).toThrow(/tokenRequest.clientIdField must be a non-empty string/);
    expect(() => sim.setWebhookUrl(1, 'localhost:3000/hook')).toThrow(/absolute URL|http: or https:/);
    expect(() => sim.injectFault({ kind: 'explode' as never })).toThrow(/fault.kind "explode" is unknown/);
    expect(() => sim.injectFault({ kind: 'status', status: 200 })).toThrow(/400 to 599/);
    expect(() => sim.injectFault({ kind: 'stall', trickleMs: 1000 })).toThrow(/trickleMs .* on a 'trickle' fault/);
    expect(() => sim.injectFault({ kind: 'trickle', trickleMs: -1 })).toThrow(/trickleMs must be a whole number/);
    const token = await simToken(sim);
    const created = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() });
    expect(() => sim.completePayment(created.body.data.trxId, 'FAILED' as never)).toThrow(/'SUCCESS' or 'REJECTED'/);
    expect(sim.payments[0].status).toBe('PENDING');
  });

  it('refuses unknown option and merchant keys with the likely key, and numbers no timer can keep', () => {
    const create = (options: object) => () => new PaymentServiceSimulator(options as never);
    expect(create({ defaultOutcomes: 'succeed' })).toThrow(/option 'defaultOutcomes' is unknown; did you mean 'defaultOutcome'\?/);
    expect(create({ rateLimit: false })).toThrow(/option 'rateLimit' is unknown; did you mean 'rateLimits'\?/);
    expect(create({ merchants: [{ ...SANDBOX, payoutApprovalRequierd: true }] })).toThrow(/merchants\[0\]: key 'payoutApprovalRequierd' is unknown; did you mean 'payoutApprovalRequired'\?/);
    expect(create({ merchants: [{ ...SANDBOX, subaccounts: [{ subaccountId: 's', autopayout: false }] }] })).toThrow(/key 'autopayout' is unknown; did you mean 'autoPayout'\?/);
    expect(create({ merchants: [{ ...SANDBOX, payoutApprovalRequired: 'true' }] })).toThrow(/payoutApprovalRequired must be true or false/);
    for (const [option, value] of [
      ['webhookTimeScale', -1],
      ['webhookTimeScale', 30], // the 24 h retry would overflow a timer
      ['deliveryTimeoutMs', 0],
      ['deliveryTimeoutMs', Infinity],
      ['deliveryTimeoutMs', 2 ** 31],
      ['confirmationDelayMs', Number.NaN],
      ['paymentSessionTtlMs', -1],
      ['maxBodyBytes', 1.5],
      ['port', 70000],
    ] as const) {
      expect(create({ [option]: value })).toThrow(RangeError);
      expect(create({ [option]: value })).toThrow(new RegExp(`option '${option}' must be`));
    }
    expect(create({ confirmationDelayMs: '20' })).toThrow(TypeError);
    expect(create({ rateLimits: null })).toThrow(/option 'rateLimits' must be true, false or an object of per-minute limits \(not null\)/);
    expect(create({ rateLimits: 'off' })).toThrow(/option 'rateLimits' must be/);
    expect(create({ now: 0 })).toThrow(/option 'now' must be a function/);
    // the bounds themselves are fine
    expect(create({ webhookTimeScale: 0, deliveryTimeoutMs: 2 ** 31 - 1, confirmationDelayMs: 0, port: 0 })).not.toThrow();
  });

  it('refuses fault and limit settings it would ignore: afterHandling on other kinds, the end of an id route, a limit below 1 (RangeError)', () => {
    expect(() => sim.injectFault({ path: '/payout', kind: 'rewrite', rewrite: () => undefined, afterHandling: true })).toThrow(/afterHandling is for 'status', 'reset' and 'stall'/);
    expect(() => sim.injectFault({ path: '/payout', kind: 'trickle', trickleMs: 10, afterHandling: false })).toThrow(/afterHandling/);
    for (const path of ['/trx_1/refund', '/sandbox/api/v1/trx_1/refund']) {
      expect(() => sim.injectFault({ kind: 'status', status: 503, path })).toThrow(/can never match/);
    }
    for (const value of [-1, 0, 1.5, Number.NaN, Infinity]) {
      expect(() => new PaymentServiceSimulator({ rateLimits: { tokenPerMinute: value } })).toThrow(RangeError);
    }
    expect(() => new PaymentServiceSimulator({ rateLimits: { tokenPerMinute: '5' as never } })).toThrow(TypeError);
  });

  it('answers a body nested deeper than 512 levels PAY_4000 and logs it as text: its logs stay readable', async () => {
    const token = await simToken(sim);
    const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const payout = (note: string) => `{"amount":"1","currency":"USD","recipient":{"iban":"GB00","note":${note}}}`;
    expectError(await simCall(sim, 'POST', '/payout', { token, rawBody: payout(deep(6000)), headers: { 'content-type': 'application/json' } }), 400, 'PAY_4000');
    expectError(await simCall(sim, 'POST', '/authentication/token', { rawBody: '['.repeat(6000) + ']'.repeat(6000), headers: { 'content-type': 'application/json' } }), 400, 'PAY_4000');
    // within the limit, still a payout
    expect((await simCall(sim, 'POST', '/payout', { token, rawBody: payout(deep(100)), headers: { 'content-type': 'application/json' } })).status).toBe(201);
    expect(sim.payouts).toHaveLength(1);
    expect(sim.requests.filter((r) => typeof r.body === 'string')).toHaveLength(2);
  });

  it('answers a request its HTTP parser refuses with the JSON error envelope: 431 for headers over the limit, 400 otherwise', async () => {
    const raw = async (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(sim.url).port), '127.0.0.1', () => socket.end(request));
        let answer = '';
        socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
      });
    const big = await raw(`GET /sandbox/api/v1/payments/gateways HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(big).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(big.split('\r\n\r\n')[1]!)).toEqual({ status: 'error', code: 'HEADERS_TOO_LARGE', message: 'Request headers too large.', errors: {}, data: [] });
    const bad = await raw('NOT A REQUEST\r\n\r\n');
    expect(bad).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(bad.split('\r\n\r\n')[1]!)).toMatchObject({ status: 'error', code: 'MALFORMED_REQUEST' });
  });

  it('start() called while a stop() is under way listens again once it is done', async () => {
    const stopping = sim.stop();
    await sim.start();
    await stopping;
    expect((await simCall(sim, 'GET', '/payments/gateways', { token: await simToken(sim) })).status).toBe(200);
  });

  it('stop() called while a start() is under way wins: no session expiry is armed again behind it', async () => {
    const short = new PaymentServiceSimulator({ paymentSessionTtlMs: 300 });
    await short.start();
    await simCall(short, 'POST', '/payment/create', { token: await simToken(short), body: paymentBody() });
    await short.stop();
    const starting = short.start();
    await short.stop();
    await starting;
    await sleep(600);
    // was ['payment.created', 'payment.expired']: the start re-armed the expiry after the stop, a timer outliving the simulator
    expect(short.events.map((e) => e.eventType)).toEqual(['payment.created']);
  });

  it('refuses bad reasons and waits of its control methods: a failureReason is a non-empty string, a timeoutMs a whole number a timer can keep', async () => {
    const token = await simToken(sim);
    const created = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() });
    // were stored and sent in the webhook as they were (a number, an object) where the event types say string
    expect(() => sim.completePayment(created.body.data.trxId, 'REJECTED', 42 as never)).toThrow(/completePayment: reason must be a non-empty string/);
    expect(sim.payments[0]!.status).toBe('PENDING');
    expect(() => sim.rejectPayout('po_unknown', { secret: 1 } as never)).toThrow(/rejectPayout: failureReason must be a non-empty string/);
    // were handed to a timer as they were: past 2^31-1 ms it fires at once, and "still busy after NaN ms"
    for (const timeoutMs of [3e9, -5, Number.NaN, 1.5, '100' as never]) {
      await expect(sim.waitForDeliveries({ timeoutMs })).rejects.toThrow(/waitForDeliveries: timeoutMs must be a whole number of ms from 0 to 2147483647/);
    }
  });

  it('refuses sendEvent and script arguments it could not use, naming them', () => {
    expect(() => sim.sendEvent(1, undefined as never, {})).toThrow(/sendEvent: type must be an event type/);
    expect(() => sim.sendEvent(1, 'dispute.created', undefined as never)).toThrow(/sendEvent: data must be an object/);
    expect(() => sim.sendEvent(1, 'dispute.created', [] as never)).toThrow(TypeError);
    expect(() => sim.scriptNextRefundFailure(42 as never)).toThrow(/scriptNextRefundFailure: failureReason must be a non-empty string/);
    expect(() => sim.scriptNextPayoutFailure('' as never)).toThrow(/scriptNextPayoutFailure: failureReason/);
    expect(() => sim.scriptPayment(undefined as never, 'succeed')).toThrow(/scriptPayment: idempotencyKey/);
    expect(() => sim.apiUrl('production' as never)).toThrow(/apiUrl: mode must be 'sandbox' or 'live'/);
    expect(sim.events).toHaveLength(0);
  });

  it('a rate limit given as undefined keeps the spec value (it switched the limit off)', async () => {
    const limited = new PaymentServiceSimulator({ rateLimits: { tokenPerMinute: undefined } });
    await limited.start();
    try {
      const answers: number[] = [];
      for (let i = 0; i < 11; i++) answers.push((await simCall(limited, 'POST', '/authentication/token', { body: { client_id: 'sandbox-client', client_secret: 'sandbox-secret' } })).status);
      expect(answers.filter((s) => s === 429)).toHaveLength(1);
    } finally {
      await limited.stop();
    }
  });

  it('checks currencies and countries against the ISO lists, not their shape (the service would refuse RMB and UK)', async () => {
    const token = await simToken(sim);
    const r = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ currency: 'RMB', country: 'UK' }) });
    expectError(r, 400, 'PAY_4000');
    expect(Object.keys(r.body.errors).sort()).toEqual(['country', 'currency']);
  });

  it('hands out copies of its logs: clearRequests() does not empty an array read before; its tables cannot be changed', async () => {
    await simToken(sim);
    const before = sim.requests;
    sim.clearRequests();
    expect(before).toHaveLength(1);
    expect(sim.requests).toHaveLength(0);
    expect(() => {
      (SIMULATOR_ERROR_TABLE.PAY_1001 as { status: number }).status = 418;
    }).toThrow(TypeError);
    expect(() => {
      (SIMULATED_GATEWAYS[0] as { apiRefunds: boolean }).apiRefunds = false;
    }).toThrow(TypeError);
  });

  it('refuses non-loopback hosts and ambiguous merchants', () => {
    expect(() => new PaymentServiceSimulator({ host: '0.0.0.0' })).toThrow(/loopback/);
    expect(() => new PaymentServiceSimulator({ merchants: [SANDBOX, { ...LIVE, clientId: SANDBOX.clientId }] })).toThrow(/clientId/);
    expect(() => new PaymentServiceSimulator({ merchants: [SANDBOX, { ...LIVE, merchantId: 1 }] })).toThrow(/merchantId/);
  });

  describe('authentication', () => {
    it('issues a bearer token that lives 10 minutes', async () => {
      const r = await simCall(sim, 'POST', '/authentication/token', {
        body: { client_id: 'sandbox-client', client_secret: 'sandbox-secret' },
      });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        status: 'success',
        data: { access_token: expect.any(String), token_type: 'Bearer', expires_in: 600 },
      });
      const token = r.body.data.access_token;
      expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(200);
      sim.advanceTime(599_000);
      expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(200);
      sim.advanceTime(1_000);
      expectError(await simCall(sim, 'GET', '/payments/gateways', { token }), 401, 'PAY_1003');
    });

    it('rejects bad credentials, missing fields, inactive merchants and the wrong environment', async () => {
      expectError(
        await simCall(sim, 'POST', '/authentication/token', { body: { client_id: 'sandbox-client', client_secret: 'nope' } }),
        401,
        'PAY_1004',
      );
      expectError(await simCall(sim, 'POST', '/authentication/token', { body: { client_id: 'who', client_secret: 'x' } }), 401, 'PAY_1004');
      const missing = await simCall(sim, 'POST', '/authentication/token', { body: { client_id: 'sandbox-client' } });
      expectError(missing, 400, 'PAY_4000');
      expect(missing.body.errors).toEqual({ client_secret: [expect.any(String)] });
      expectError(
        await simCall(sim, 'POST', '/authentication/token', {
          mode: 'live',
          body: { client_id: 'sandbox-client', client_secret: 'sandbox-secret' },
        }),
        400,
        'PAY_1005',
      );
      expectError(
        await simCall(sim, 'POST', '/authentication/token', { body: { client_id: 'live-client', client_secret: 'live-secret' } }),
        400,
        'PAY_1005',
      );
      sim.setMerchantActive(1, false);
      expectError(
        await simCall(sim, 'POST', '/authentication/token', { body: { client_id: 'sandbox-client', client_secret: 'sandbox-secret' } }),
        400,
        'PAY_6001',
      );
    });

    it('answers PAY_1001 / PAY_1002 / PAY_2003 / PAY_6001 on other calls', async () => {
      expectError(await simCall(sim, 'GET', '/payments/gateways'), 401, 'PAY_1001');
      // a header was sent (PAY_1001 is "no Authorization header sent"), with no token of a live session in it
      for (const authorization of ['Basic abc', 'Bearer', 'Token abc']) {
        expectError(await simCall(sim, 'GET', '/payments/gateways', { headers: { authorization } }), 403, 'PAY_1002');
      }
      expectError(await simCall(sim, 'GET', '/payments/gateways', { token: 'forged' }), 403, 'PAY_1002');
      const sandboxToken = await simToken(sim);
      expectError(await simCall(sim, 'GET', '/payments/gateways', { token: sandboxToken, mode: 'live' }), 400, 'PAY_2003');
      const liveToken = await simToken(sim, { clientId: 'live-client', clientSecret: 'live-secret', mode: 'live' });
      expect((await simCall(sim, 'GET', '/payments/gateways', { token: liveToken, mode: 'live' })).status).toBe(200);
      sim.setMerchantActive(1, false);
      expectError(await simCall(sim, 'GET', '/payments/gateways', { token: sandboxToken }), 400, 'PAY_6001');
    });
  });

  describe('payments', () => {
    it('creates a PENDING payment with 8-decimal amounts, emits payment.created, reads it back', async () => {
      const token = await simToken(sim);
      const body = paymentBody({ amount: '25.5', country: 'GH', custom: 'order-42' });
      const r = await simCall(sim, 'POST', '/payment/create', { token, body });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('success');
      expect(r.body.data).toMatchObject({
        trxId: expect.any(String),
        token: expect.any(String),
        amount: '25.50000000',
        currency: 'USD',
        status: 'PENDING',
        custom: 'order-42',
        merchantId: 1,
      });
      const trxId = r.body.data.trxId;
      const s = await simCall(sim, 'GET', `/payment/status?trx_id=${encodeURIComponent(trxId)}`, { token });
      expect(s.status).toBe(200);
      expect(s.body.data).toMatchObject({ trxId, status: 'PENDING', amount: '25.50000000' });
      expect(sim.events.map((e) => e.eventType)).toEqual(['payment.created']);
      expect(sim.events[0]).toMatchObject({
        eventId: expect.stringMatching(/^evt_/),
        apiVersion: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        environment: 'sandbox',
        data: { trxId, amount: '25.50000000', status: 'PENDING', custom: 'order-42', merchantId: 1 },
      });

      sim.completePayment(trxId, 'SUCCESS');
      const after = await simCall(sim, 'GET', `/payment/status?trx_id=${trxId}`, { token });
      expect(after.body.data.status).toBe('SUCCESS');
      expect(sim.events.map((e) => e.eventType)).toEqual(['payment.created', 'payment.succeeded']);
    });

    it('returns the same payment for the same idempotency key, without a second payment.created', async () => {
      const token = await simToken(sim);
      const body = paymentBody();
      const a = await simCall(sim, 'POST', '/payment/create', { token, body });
      const b = await simCall(sim, 'POST', '/payment/create', { token: await simToken(sim), body });
      expect(b.status).toBe(200);
      expect(b.body.data.trxId).toBe(a.body.data.trxId);
      expect(sim.payments).toHaveLength(1);
      expect(sim.events.filter((e) => e.eventType === 'payment.created')).toHaveLength(1);
    });

    it('validates with per-field errors (PAY_4000)', async () => {
      const token = await simToken(sim);
      const r = await simCall(sim, 'POST', '/payment/create', {
        token,
        body: { amount: 12.5, currency: 'usd', country: 'GHA', splits: [{ subaccount_id: 'nope', amount: 'x' }] },
      });
      expectError(r, 400, 'PAY_4000');
      expect(Object.keys(r.body.errors).sort()).toEqual(
        ['amount', 'country', 'currency', 'idempotency_key', 'splits.0.amount', 'splits.0.subaccount_id'].sort(),
      );
      for (const messages of Object.values(r.body.errors)) expect(messages).toEqual([expect.any(String)]);
      for (const bad of ['-1', '0', '1.123456789', 'abc', '1e5', ' 1', '1234567890123456789']) {
        const x = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ amount: bad }) });
        expect({ bad, code: x.body.code, fields: Object.keys(x.body.errors) }).toEqual({ bad, code: 'PAY_4000', fields: ['amount'] });
      }
      expect(sim.payments).toHaveLength(0);
    });

    it("takes every amount the module's client sends: 18 digits before the point, 8 after", async () => {
      const token = await simToken(sim);
      const amount = '123456789012345678.12345678';
      const r = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ amount }) });
      expect(r.status).toBe(200);
      expect(sim.payment(r.body.data.trxId)?.amount).toBe(amount);
    });

    it('answers 202 and emits payment.pending for asynchronous providers, then confirms', async () => {
      const token = await simToken(sim);
      sim.scriptNextPayment('pending-then-succeed');
      const r = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() });
      expect(r.status).toBe(202);
      expect(r.body.data.status).toBe('PENDING');
      await sim.waitForDeliveries();
      expect(sim.payment(r.body.data.trxId)?.status).toBe('SUCCESS');
      expect(sim.events.map((e) => e.eventType)).toEqual(['payment.created', 'payment.pending', 'payment.succeeded']);
    });

    it('answers 202 to status reads and key replays while an asynchronous payment awaits its provider, 200 once it settled', async () => {
      const slow = new PaymentServiceSimulator({ confirmationDelayMs: 400 });
      await slow.start();
      try {
        const token = await simToken(slow);
        slow.scriptNextPayment('pending-then-succeed');
        const body = paymentBody();
        const created = await simCall(slow, 'POST', '/payment/create', { token, body });
        const trxId = created.body.data.trxId as string;
        const read = () => simCall(slow, 'GET', `/payment/status?trx_id=${trxId}`, { token });
        expect((await read()).status).toBe(202);
        expect((await simCall(slow, 'POST', '/payment/create', { token, body })).status).toBe(202);
        await slow.waitForDeliveries();
        expect(await read()).toMatchObject({ status: 200, body: { data: { status: 'SUCCESS' } } });
        // the same key, replayed after the payment settled: that payment, as it is now
        expect(await simCall(slow, 'POST', '/payment/create', { token, body })).toMatchObject({ status: 200, body: { data: { trxId, status: 'SUCCESS' } } });
      } finally {
        await slow.stop();
      }
    });

    it('runs scripted outcomes from the queue, the idempotency key and a sim: tag in custom', async () => {
      const token = await simToken(sim);
      sim.scriptNextPayment('fail', 'cancel');
      const keyed = paymentBody();
      sim.scriptPayment(keyed.idempotency_key as string, 'expire');
      const ids: string[] = [];
      for (const body of [paymentBody(), paymentBody(), keyed, paymentBody({ custom: 'order-9 sim:succeed' })]) {
        const r = await simCall(sim, 'POST', '/payment/create', { token, body });
        expect(r.status).toBe(200);
        ids.push(r.body.data.trxId);
      }
      const finals = sim.events.filter((e) => e.eventType !== 'payment.created').map((e) => [e.eventType, (e.data as any).trxId]);
      expect(finals).toEqual([
        ['payment.failed', ids[0]],
        ['payment.cancelled', ids[1]],
        ['payment.expired', ids[2]],
        ['payment.succeeded', ids[3]],
      ]);
      expect(sim.payments.map((p) => p.status)).toEqual(['REJECTED', 'REJECTED', 'REJECTED', 'SUCCESS']);
    });

    it('answers PAY_5003 when every provider fails, creating nothing', async () => {
      const token = await simToken(sim);
      sim.scriptNextPayment('provider-failure');
      const body = paymentBody();
      expectError(await simCall(sim, 'POST', '/payment/create', { token, body }), 500, 'PAY_5003');
      expect(sim.payments).toHaveLength(0);
      expect(sim.events).toHaveLength(0);
      // the same key works once the providers are back
      expect((await simCall(sim, 'POST', '/payment/create', { token, body })).status).toBe(200);
    });

    it('answers PAY_2001 for unknown payments and other merchants’ payments', async () => {
      const token = await simToken(sim);
      expectError(await simCall(sim, 'GET', '/payment/status?trx_id=trx_nope', { token }), 404, 'PAY_2001');
      expectError(await simCall(sim, 'GET', '/payment/status', { token }), 400, 'PAY_4000');
      const other = new PaymentServiceSimulator({
        merchants: [SANDBOX, { ...SANDBOX, merchantId: 3, clientId: 'c3', clientSecret: 's3' }],
      });
      await other.start();
      try {
        const t1 = await simToken(other);
        const t3 = await simToken(other, { clientId: 'c3', clientSecret: 's3' });
        const r = await simCall(other, 'POST', '/payment/create', { token: t1, body: paymentBody() });
        expectError(await simCall(other, 'GET', `/payment/status?trx_id=${r.body.data.trxId}`, { token: t3 }), 404, 'PAY_2001');
      } finally {
        await other.stop();
      }
    });

    it('lists gateways', async () => {
      const r = await simCall(sim, 'GET', '/payments/gateways', { token: await simToken(sim) });
      expect(r.body.data).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'card', name: expect.any(String) })]));
    });
  });

  describe('refunds', () => {
    async function paid(token: string, outcome: 'succeed' | 'no-api-refund' = 'succeed'): Promise<string> {
      sim.scriptNextPayment(outcome);
      const r = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ amount: '10' }) });
      return r.body.data.trxId;
    }

    it('refunds SUCCESS payments (201), looks them up, emits refund.succeeded', async () => {
      const token = await simToken(sim);
      const trxId = await paid(token);
      const r = await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: { amount: '4', reason: 'damaged' } });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ refundUid: expect.any(String), trxId, amount: '4.00000000', status: 'SUCCESS' });
      const l = await simCall(sim, 'GET', `/refund/${r.body.data.refundUid}`, { token });
      expect(l.status).toBe(200);
      expect(l.body.data.refundUid).toBe(r.body.data.refundUid);
      expect(sim.events.at(-1)).toMatchObject({ eventType: 'refund.succeeded', data: { refundUid: r.body.data.refundUid } });
      // full remaining amount by default, then nothing left
      const rest = await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: {} });
      expect(rest.body.data.amount).toBe('6.00000000');
      expectError(await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: { amount: '1' } }), 400, 'PAY_4000');
      expect(sim.refunds).toHaveLength(2);
    });

    it('refuses refunds of non-SUCCESS payments (PAY_2004), no-API providers (PAY_2006), unknown ids', async () => {
      const token = await simToken(sim);
      const pending = (await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody() })).body.data.trxId;
      expectError(await simCall(sim, 'POST', `/payment/${pending}/refund`, { token, body: {} }), 422, 'PAY_2004');
      sim.completePayment(pending, 'REJECTED');
      expectError(await simCall(sim, 'POST', `/payment/${pending}/refund`, { token, body: {} }), 422, 'PAY_2004');
      const manual = await paid(token, 'no-api-refund');
      expectError(await simCall(sim, 'POST', `/payment/${manual}/refund`, { token, body: {} }), 422, 'PAY_2006');
      // the script holds whatever gateway the request named
      sim.scriptNextPayment('no-api-refund');
      const viaCard = (await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ amount: '10', gateway: 'card' }) })).body.data.trxId;
      expectError(await simCall(sim, 'POST', `/payment/${viaCard}/refund`, { token, body: {} }), 422, 'PAY_2006');
      // and a request that named bank-transfer (no API refunds) whatever the script
      sim.scriptNextPayment('succeed');
      const viaBank = (await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ amount: '10', gateway: 'bank-transfer' }) })).body.data.trxId;
      expect(sim.payment(viaBank)?.status).toBe('SUCCESS');
      expectError(await simCall(sim, 'POST', `/payment/${viaBank}/refund`, { token, body: {} }), 422, 'PAY_2006');
      expectError(await simCall(sim, 'POST', '/payment/trx_none/refund', { token, body: {} }), 404, 'PAY_2001');
      expectError(await simCall(sim, 'GET', '/refund/rfd_none', { token }), 404, 'PAY_2005');
      expect(sim.refunds).toHaveLength(0);
    });

    it('emits refund.failed for a scripted failure', async () => {
      const token = await simToken(sim);
      const trxId = await paid(token);
      sim.scriptNextRefundFailure('bank said no');
      const r = await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: {} });
      expect(r.body.data).toMatchObject({ status: 'FAILED', failureReason: 'bank said no' });
      expect(sim.events.at(-1)).toMatchObject({ eventType: 'refund.failed', data: { failureReason: 'bank said no' } });
    });

    it('clearScripts() drops every script not used yet: payment outcomes (queued and by key), refund and payout failures', async () => {
      const token = await simToken(sim);
      const trxId = await paid(token);
      sim.scriptNextPayment('fail', 'fail');
      sim.scriptPayment('order-kept', 'fail');
      sim.scriptNextRefundFailure('bank said no');
      sim.scriptNextPayoutFailure('account closed');
      sim.clearScripts();
      const created = await simCall(sim, 'POST', '/payment/create', { token, body: paymentBody({ amount: '10', idempotency_key: 'order-kept' }) });
      expect(sim.payment(created.body.data.trxId)?.outcome).toBe('manual'); // this simulator's default, no script
      const refund = await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: { amount: '1' } });
      expect(refund.body.data).toMatchObject({ status: 'SUCCESS' });
      const payout = await simCall(sim, 'POST', '/payout', { token, body: { amount: '1', currency: 'USD', recipient: { account_number: '1' } } });
      expect(payout.body.data.status).not.toBe('FAILED');
    });

    it('a refund that succeeds is taken out of the wallet (below zero if need be), a failed one is not', async () => {
      const token = await simToken(sim);
      const trxId = await paid(token); // wallet 100 + 10
      await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: { amount: '4' } });
      expect(sim.walletBalance(1)).toBe('106.00000000');
      sim.scriptNextRefundFailure('bank said no');
      await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: { amount: '1' } });
      expect(sim.walletBalance(1)).toBe('106.00000000');
      sim.setWalletBalance(1, '2');
      await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: {} });
      expect(sim.walletBalance(1)).toBe('-4.00000000');
      const payout = await simCall(sim, 'POST', '/payout', { token, body: { amount: '1', currency: 'USD', recipient: { account_number: '1' } } });
      expectError(payout, 422, 'PAY_3001');
    });
  });

  describe('payouts', () => {
    const recipient = { name: 'Ama', account_number: '0123456789', bank_code: '044' };

    it('pays out from the wallet (201), looks up, emits payout.created + payout.succeeded', async () => {
      const token = await simToken(sim);
      const r = await simCall(sim, 'POST', '/payout', { token, body: { amount: '40', currency: 'USD', recipient } });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ payoutUid: expect.any(String), amount: '40.00000000' });
      expect(sim.walletBalance(1)).toBe('60.00000000');
      const l = await simCall(sim, 'GET', `/payout/${r.body.data.payoutUid}`, { token });
      expect(l.body.data).toMatchObject({ payoutUid: r.body.data.payoutUid, status: 'SUCCESS' });
      expect(sim.events.map((e) => e.eventType)).toEqual(['payout.created', 'payout.succeeded']);
      expectError(await simCall(sim, 'GET', '/payout/pyo_none', { token }), 404, 'PAY_3002');
      // a copy all the way down: the recipient of the record read is not the simulator's
      (sim.payouts[0]!.recipient as Record<string, unknown>).account_number = 'MUTATED';
      expect(sim.payouts[0]!.recipient).toMatchObject({ account_number: '0123456789' });
      expect(Object.isFrozen(SPEC_RETRY_DELAYS_MS) && Object.isFrozen(PAYMENT_OUTCOMES)).toBe(true);
    });

    it('answers PAY_3001 on insufficient balance or missing destination, PAY_4000 on bad fields', async () => {
      const token = await simToken(sim);
      expectError(await simCall(sim, 'POST', '/payout', { token, body: { amount: '100.00000001', currency: 'USD', recipient } }), 422, 'PAY_3001');
      expectError(await simCall(sim, 'POST', '/payout', { token, body: { amount: '1', currency: 'USD' } }), 422, 'PAY_3001');
      expectError(await simCall(sim, 'POST', '/payout', { token, body: { amount: '1', currency: 'USD', recipient: { name: 'x' } } }), 422, 'PAY_3001');
      const v = await simCall(sim, 'POST', '/payout', { token, body: { amount: 'ten', currency: 'US', recipient } });
      expectError(v, 400, 'PAY_4000');
      expect(Object.keys(v.body.errors).sort()).toEqual(['amount', 'currency']);
      expect(sim.payouts).toHaveLength(0);
      expect(sim.walletBalance(1)).toBe('100.00000000');
    });

    it('answers 202 when approval is required; approve / reject settle it', async () => {
      const s2 = new PaymentServiceSimulator({ merchants: [{ ...SANDBOX, payoutApprovalRequired: true }] });
      await s2.start();
      try {
        const token = await simToken(s2);
        const a = await simCall(s2, 'POST', '/payout', { token, body: { amount: '10', currency: 'USD', recipient } });
        expect(a.status).toBe(202);
        expect(a.body.data.status).toBe('PENDING_APPROVAL');
        const b = await simCall(s2, 'POST', '/payout', { token, body: { amount: '10', currency: 'USD', recipient } });
        s2.approvePayout(a.body.data.payoutUid);
        s2.rejectPayout(b.body.data.payoutUid, 'compliance');
        expect(s2.walletBalance(1)).toBe('90.00000000');
        expect(s2.events.map((e) => e.eventType)).toEqual(['payout.created', 'payout.created', 'payout.succeeded', 'payout.failed']);
      } finally {
        await s2.stop();
      }
    });

    it('emits payout.failed and restores the balance for a scripted failure', async () => {
      const token = await simToken(sim);
      sim.scriptNextPayoutFailure('account closed');
      const r = await simCall(sim, 'POST', '/payout', { token, body: { amount: '5', currency: 'USD', recipient } });
      expect(r.status).toBe(201);
      expect(sim.walletBalance(1)).toBe('100.00000000');
      expect(sim.events.at(-1)).toMatchObject({ eventType: 'payout.failed', data: { failureReason: 'account closed' } });
    });
  });

  describe('splits', () => {
    it('settles splits to subaccounts and pays them out automatically', async () => {
      const token = await simToken(sim);
      sim.scriptNextPayment('succeed');
      const r = await simCall(sim, 'POST', '/payment/create', {
        token,
        body: paymentBody({ amount: '10', splits: [{ subaccount_id: 'sub-a', amount: '3' }] }),
      });
      expect(r.status).toBe(200);
      expect(sim.events.map((e) => e.eventType)).toEqual([
        'payment.created',
        'payment.succeeded',
        'split.settled',
        'subaccount_payout.created',
        'subaccount_payout.succeeded',
      ]);
      expect(sim.events[2].data).toMatchObject({ trxId: r.body.data.trxId, splits: [{ subaccountId: 'sub-a', amount: '3.00000000' }] });
      expect(sim.walletBalance(1)).toBe('107.00000000');
      expect(sim.subaccountPayouts).toEqual([expect.objectContaining({ subaccountId: 'sub-a', status: 'SUCCESS' })]);
      const subs = await simCall(sim, 'GET', '/subaccounts', { token });
      expect(subs.body.data).toEqual([{ subaccountId: 'sub-a', balance: '0.00000000' }]);
    });

    it('a full refund of a split payment takes its whole amount out of the wallet; the splits stay where they went (as the README says)', async () => {
      const token = await simToken(sim);
      sim.scriptNextPayment('succeed');
      const paid = await simCall(sim, 'POST', '/payment/create', {
        token,
        body: paymentBody({ amount: '10', splits: [{ subaccount_id: 'sub-a', amount: '4' }] }),
      });
      expect(sim.walletBalance(1)).toBe('106.00000000');
      const refund = await simCall(sim, 'POST', `/payment/${paid.body.data.trxId}/refund`, { token, body: {} });
      expect(refund.status).toBe(201);
      expect(sim.walletBalance(1)).toBe('96.00000000');
    });
  });

  describe('session expiry', () => {
    it('expires manual PENDING payments after paymentSessionTtlMs on the simulator clock', async () => {
      const s2 = new PaymentServiceSimulator({ paymentSessionTtlMs: 15 * 60_000 });
      await s2.start();
      try {
        const token = await simToken(s2);
        const trxId = (await simCall(s2, 'POST', '/payment/create', { token, body: paymentBody() })).body.data.trxId;
        s2.advanceTime(14 * 60_000);
        expect(s2.payment(trxId)?.status).toBe('PENDING');
        s2.advanceTime(60_000);
        expect(s2.payment(trxId)).toMatchObject({ status: 'REJECTED', failureReason: 'expired' });
        expect(s2.events.map((e) => e.eventType)).toEqual(['payment.created', 'payment.expired']);
      } finally {
        await s2.stop();
      }
    });

    // `sim.events` and the receiver do not catch up: what they show below came from the expiry timer
    let receiver: WebhookReceiver;
    let s2: PaymentServiceSimulator;
    async function startWithReceiver(options: ConstructorParameters<typeof PaymentServiceSimulator>[0]): Promise<string> {
      receiver = new WebhookReceiver();
      s2 = new PaymentServiceSimulator({ merchants: [{ ...SANDBOX, webhookUrl: await receiver.start() }], ...options });
      await s2.start();
      return simToken(s2);
    }
    const create = async (token: string): Promise<string> =>
      (await simCall(s2, 'POST', '/payment/create', { token, body: paymentBody() })).body.data.trxId;
    const delivered = () => receiver.received.map((r) => [r.body.eventType, r.body.data.trxId]);
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    afterEach(async () => {
      await s2?.stop();
      await receiver?.stop();
    });

    it('on the real clock a session expires on its own and payment.expired is delivered; the wait right after creation does not wait for the TTL', async () => {
      const token = await startWithReceiver({ paymentSessionTtlMs: 1_000 });
      const trxId = await create(token);
      await s2.waitForDeliveries({ timeoutMs: 500 });
      expect(receiver.types).toEqual(['payment.created']);
      await waitFor('payment.expired delivered', () => receiver.types.length === 2, 5_000);
      expect(delivered()).toEqual([
        ['payment.created', trxId],
        ['payment.expired', trxId],
      ]);
      expect(receiver.received[1]!.body.data).toMatchObject({ status: 'REJECTED', failureReason: 'expired' });
      expect(() => s2.completePayment(trxId, 'SUCCESS')).toThrow(/already REJECTED/);
      expect(s2.walletBalance(1)).toBe('100.00000000');
    });

    it('advanceTime() brings a running expiry forward: the session expires the rest of its TTL later in real time', async () => {
      const token = await startWithReceiver({ paymentSessionTtlMs: 60 * 60_000 });
      const trxId = await create(token);
      s2.advanceTime(60 * 60_000 - 200);
      expect(s2.events.map((e) => e.eventType)).toEqual(['payment.created']);
      await waitFor('payment.expired delivered', () => receiver.types.length === 2, 5_000);
      expect(delivered()).toEqual([
        ['payment.created', trxId],
        ['payment.expired', trxId],
      ]);
    });

    it('payment(), payments and completePayment() first expire sessions past their TTL: an expired session cannot be paid', async () => {
      let now = Date.parse('2030-01-01T00:00:00Z');
      const token = await startWithReceiver({ now: () => now, paymentSessionTtlMs: 100 });
      // the clock is moved by hand, neither by advanceTime() nor by a request: each read below is the first to see it
      const a = await create(token);
      now += 100;
      expect(s2.payment(a)).toMatchObject({ status: 'REJECTED', failureReason: 'expired' });
      const b = await create(token);
      now += 100;
      expect(s2.payments.find((p) => p.trxId === b)).toMatchObject({ status: 'REJECTED', failureReason: 'expired' });
      const c = await create(token);
      now += 100;
      expect(() => s2.completePayment(c, 'SUCCESS')).toThrow(`Payment ${c} is already REJECTED`);
      expect(s2.walletBalance(1)).toBe('100.00000000');
      expect(s2.events.map((e) => [e.eventType, e.data.trxId])).toEqual(
        [a, b, c].flatMap((trxId) => [
          ['payment.created', trxId],
          ['payment.expired', trxId],
        ]),
      );
    });

    it('waitForDeliveries() expires the sessions past their TTL first and waits for their payment.expired', async () => {
      let now = Date.parse('2030-01-01T00:00:00Z');
      const token = await startWithReceiver({ now: () => now, paymentSessionTtlMs: 100 });
      const trxId = await create(token);
      await s2.waitForDeliveries();
      now += 100;
      await s2.waitForDeliveries();
      expect(delivered()).toEqual([
        ['payment.created', trxId],
        ['payment.expired', trxId],
      ]);
    });

    it('on a clock that stands still (a now option) the expiry timer expires nothing and is not armed again: the expiry follows advanceTime()', async () => {
      const token = await startWithReceiver({ now: () => Date.parse('2030-01-01T00:00:00Z'), paymentSessionTtlMs: 50 });
      await create(token);
      await s2.waitForDeliveries();
      s2.advanceTime(50); // the first session expires: only the second one's timer is new below
      await s2.waitForDeliveries();
      const before = timers();
      const trxId = await create(token);
      await s2.waitForDeliveries();
      await sleep(200);
      expect(timers()).toBeLessThanOrEqual(before);
      expect(s2.payment(trxId)!.status).toBe('PENDING');
      s2.advanceTime(50);
      await s2.waitForDeliveries();
      expect(receiver.types).toEqual(['payment.created', 'payment.expired', 'payment.created', 'payment.expired']);
    });

    it('stop() disarms the expiry timers (nothing expires while stopped) and start() arms them again', async () => {
      const token = await startWithReceiver({ paymentSessionTtlMs: 200 });
      const trxId = await create(token);
      await s2.waitForDeliveries();
      await s2.stop();
      await sleep(400);
      expect(s2.events.map((e) => e.eventType)).toEqual(['payment.created']);
      await s2.start();
      await waitFor('payment.expired delivered', () => receiver.types.length === 2, 5_000);
      expect(delivered()).toEqual([
        ['payment.created', trxId],
        ['payment.expired', trxId],
      ]);
    });

    it('a session settled before its TTL leaves no expiry timer behind', async () => {
      s2 = new PaymentServiceSimulator({ merchants: [SANDBOX], paymentSessionTtlMs: 60 * 60_000 });
      await s2.start();
      const token = await simToken(s2);
      await create(token); // sockets and the client's timers in place: only the expiry timer is new below
      const before = timers();
      const trxId = await create(token);
      await waitFor('the expiry timer is armed', () => timers() > before, 2_000);
      s2.completePayment(trxId, 'SUCCESS');
      await waitFor('the expiry timer is gone', () => timers() <= before, 2_000);
    });
  });

  describe('event coverage', () => {
    it('can drive every event type of spec 6.1', async () => {
      const s2 = new PaymentServiceSimulator({
        merchants: [
          { ...SANDBOX, payoutApprovalRequired: false, subaccounts: [{ subaccountId: 'ok' }, { subaccountId: 'bad', failPayouts: true }] },
        ],
      });
      await s2.start();
      try {
        const token = await simToken(s2);
        const create = (body: Record<string, unknown>) => simCall(s2, 'POST', '/payment/create', { token, body: paymentBody(body) });
        s2.scriptNextPayment('pending-then-succeed', 'fail', 'cancel', 'expire');
        const paid = (
          await create({ amount: '10', splits: [{ subaccount_id: 'ok', amount: '1' }, { subaccount_id: 'bad', amount: '1' }] })
        ).body.data.trxId;
        for (let i = 0; i < 3; i++) await create({});
        await s2.waitForDeliveries();
        await simCall(s2, 'POST', `/payment/${paid}/refund`, { token, body: { amount: '1' } });
        s2.scriptNextRefundFailure();
        await simCall(s2, 'POST', `/payment/${paid}/refund`, { token, body: { amount: '1' } });
        const recipient = { account_number: '1' };
        await simCall(s2, 'POST', '/payout', { token, body: { amount: '1', currency: 'USD', recipient } });
        s2.scriptNextPayoutFailure();
        await simCall(s2, 'POST', '/payout', { token, body: { amount: '1', currency: 'USD', recipient } });
        s2.sendEvent(1, 'dispute.created', { trxId: paid });
        expect(new Set(s2.events.map((e) => e.eventType))).toEqual(new Set(PAYMENT_EVENT_TYPES));
      } finally {
        await s2.stop();
      }
    });
  });

  describe('bad input', () => {
    it('answers malformed HTTP with 400 and keeps serving', async () => {
      const { port } = new URL(sim.url);
      const reply = await new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
        let data = '';
        socket.on('data', (c) => (data += c.toString()));
        socket.on('close', () => resolve(data));
        socket.on('error', () => resolve(data));
      });
      expect(reply).toMatch(/^HTTP\/1\.1 400/);
      expect((await simCall(sim, 'GET', '/payments/gateways')).status).toBe(401);
    });

    it('answers the error envelope for bad JSON, unknown paths, wrong methods and huge bodies', async () => {
      const token = await simToken(sim);
      const badJson = await simCall(sim, 'POST', '/payment/create', { token, rawBody: '{"amount":', headers: { 'content-type': 'application/json' } });
      expectError(badJson, 400, 'PAY_4000');
      expect(badJson.body.errors.body).toBeDefined();
      expectError(await simCall(sim, 'POST', '/payment/create', { token, rawBody: '[1,2]' }), 400, 'PAY_4000');
      expectError(await simCall(sim, 'GET', '/nope', { token }), 404, 'NOT_FOUND');
      const outside = await fetch(`${sim.url}/elsewhere`);
      expect(outside.status).toBe(404);
      expect(((await outside.json()) as { code: string }).code).toBe('NOT_FOUND');
      const wrong = await simCall(sim, 'GET', '/payment/create', { token });
      expectError(wrong, 405, 'METHOD_NOT_ALLOWED');
      expect(wrong.headers.get('allow')).toBe('POST');
      const huge = await simCall(sim, 'POST', '/payment/create', { token, rawBody: 'x'.repeat(2 * 1024 * 1024) });
      expectError(huge, 413, 'PAYLOAD_TOO_LARGE');
      expectError(await simCall(sim, 'GET', '/refund/%E0%A4%A', { token }), 400, 'PAY_4000');
      // still serving
      expect((await simCall(sim, 'GET', '/payments/gateways', { token })).status).toBe(200);
    });
  });
});
