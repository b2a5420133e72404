import { PaymentServiceSimulator, type SimulatorAnswerBody, type SimulatorRequestRecord } from '../../lib/testing/index.js';
import { paymentBody, simCall, simToken } from '../support/simulator-http.js';

describe("PaymentServiceSimulator 'rewrite' faults", () => {
  let sim: PaymentServiceSimulator;
  let token: string;

  beforeEach(async () => {
    sim = new PaymentServiceSimulator({
      merchants: [
        { merchantId: 1, clientId: 'sandbox-client', clientSecret: 'sandbox-secret', webhookSecret: 'whsec_s', mode: 'sandbox' },
        { merchantId: 2, clientId: 'live-client', clientSecret: 'live-secret', webhookSecret: 'whsec_l', mode: 'live' },
      ],
    });
    await sim.start();
    token = await simToken(sim);
  });
  afterEach(() => sim.stop());

  const create = (body = paymentBody()) => simCall(sim, 'POST', '/payment/create', { token, body });
  const status = (trxId: string) => simCall(sim, 'GET', `/payment/status?trx_id=${trxId}`, { token });

  it('answers the status call with only the body the rewrite returns, once, leaving the payment alone', async () => {
    const trxId = (await create()).body.data.trxId;
    sim.injectFault({
      method: 'GET',
      path: '/payment/status',
      kind: 'rewrite',
      rewrite: () => ({ body: { status: 'success', data: { status: 'SUCCESS' } } }),
    });
    const rewritten = await status(trxId);
    expect([rewritten.status, rewritten.body]).toEqual([200, { status: 'success', data: { status: 'SUCCESS' } }]);
    expect(rewritten.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(sim.payment(trxId)?.status).toBe('PENDING');
    expect(sim.requests.at(-1)).toMatchObject({ route: '/payment/status', status: 200, fault: 'rewrite' });
    // one use by default, then the real answer again
    expect((await status(trxId)).body.data).toMatchObject({ trxId, status: 'PENDING' });
  });

  it('creates the payment for real and answers it with snake_case trx_id', async () => {
    sim.injectFault({
      method: 'POST',
      path: '/payment/create',
      kind: 'rewrite',
      rewrite: ({ data: { trxId, ...rest }, ...envelope }) => ({ body: { ...envelope, data: { ...rest, trx_id: trxId } } }),
    });
    const body = paymentBody();
    const r = await create(body);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ trx_id: sim.payments[0].trxId, status: 'PENDING', amount: '25.50000000' });
    expect(r.body.data).not.toHaveProperty('trxId');
    expect(sim.events.map((e) => e.eventType)).toEqual(['payment.created']);
    // the retry with the same key gets the real shape of the same payment
    const retry = await create(body);
    expect(retry.body.data.trxId).toBe(r.body.data.trx_id);
    expect(sim.payments).toHaveLength(1);
  });

  it('drops a field changed in place (returning nothing), or replaces only the status', async () => {
    sim.scriptNextPayment('succeed');
    const trxId = (await create()).body.data.trxId;
    sim.injectFault({
      path: /\/refund$/,
      kind: 'rewrite',
      rewrite: (body) => {
        delete body.data.refundUid;
      },
    });
    const refund = await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token, body: { amount: '1' } });
    expect(refund.status).toBe(201);
    expect(refund.body.data).toEqual({ ...sim.refunds[0], refundUid: undefined });
    expect(refund.body.data).not.toHaveProperty('refundUid');
    expect(sim.events.at(-1)?.eventType).toBe('refund.succeeded');

    sim.injectFault({ method: 'POST', path: '/payout', kind: 'rewrite', rewrite: () => ({ status: 202 }) });
    const payout = await simCall(sim, 'POST', '/payout', { token, body: { amount: '5', currency: 'USD', recipient: { iban: 'GB00' } } });
    expect(payout.status).toBe(202);
    expect(payout.body.data).toMatchObject({ payoutUid: sim.payouts[0].payoutUid, status: 'PENDING' });
    expect(sim.payouts[0].status).toBe('SUCCESS');
  });

  it('hands the rewrite the real status, the error envelope of a failed call and the logged request', async () => {
    const seen: Array<[SimulatorAnswerBody, number, SimulatorRequestRecord]> = [];
    sim.injectFault({
      path: '/payment/status',
      kind: 'rewrite',
      rewrite: (body, answered, request) => {
        seen.push([body, answered, { ...request }]);
        return { status: 200, body: { status: 'success', data: null } };
      },
    });
    const r = await status('trx_unknown');
    expect([r.status, r.body]).toEqual([200, { status: 'success', data: null }]);
    const [[body, answered, request]] = seen;
    expect(body).toEqual({ status: 'error', code: 'PAY_2001', message: expect.any(String), errors: {}, data: [] });
    expect(answered).toBe(404);
    expect(request).toMatchObject({ method: 'GET', route: '/payment/status', mode: 'sandbox', query: { trx_id: 'trx_unknown' } });
    expect(sim.requests.at(-1)).toMatchObject({ status: 200, fault: 'rewrite' });
    expect(sim.requests.at(-1)?.code).toBeUndefined();
  });

  it('hands the rewrite a copy of the logged request: changing it leaves sim.requests as received', async () => {
    sim.injectFault({
      path: '/payment/status',
      kind: 'rewrite',
      rewrite: (_body, _status, request) => {
        (request as { path: string }).path = '/tampered';
        (request.headers as Record<string, string>).authorization = 'tampered';
      },
    });
    await status('trx_unknown');
    expect(sim.requests.at(-1)).toMatchObject({ route: '/payment/status', headers: { authorization: expect.stringMatching(/^Bearer /) } });
    expect(sim.requests.at(-1)?.path).not.toBe('/tampered');
  });

  it('matches by method, path, environment and times like the other faults', async () => {
    const liveToken = await simToken(sim, { clientId: 'live-client', clientSecret: 'live-secret', mode: 'live' });
    sim.injectFault({ method: 'GET', path: '/payments/gateways', mode: 'live', kind: 'rewrite', times: 2, rewrite: () => ({ body: [] }) });
    const gateways = async (mode: 'sandbox' | 'live') =>
      (await simCall(sim, 'GET', '/payments/gateways', { token: mode === 'live' ? liveToken : token, mode })).body;
    expect((await gateways('sandbox')).data).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'card' })]));
    expect(await gateways('live')).toEqual([]);
    expect(await gateways('live')).toEqual([]);
    expect((await gateways('live')).status).toBe('success');
  });

  it('answers 500 INTERNAL_ERROR naming the problem when the rewrite is broken, after handling the call', async () => {
    const broken: Array<[string, () => unknown, RegExp]> = [
      ['throws', () => { throw new Error('boom'); }, /rewrite fault failed: boom/],
      ['returns the body itself', () => ({ status: 'success', data: {} }), /unknown field\(s\) data/],
      ['returns a bad status', () => ({ status: 700 }), /status must be an integer from 200 to 599/],
      ['returns a string', () => 'text', /return \{ body\?, status\? \} or nothing/],
      ['returns a body that is no JSON', () => ({ body: () => 1 }), /not a JSON value/],
    ];
    for (const [what, rewrite, message] of broken) {
      sim.injectFault({ path: '/payment/create', kind: 'rewrite', rewrite: rewrite as () => void });
      const r = await create();
      expect({ what, status: r.status, code: r.body.code }).toEqual({ what, status: 500, code: 'INTERNAL_ERROR' });
      expect(r.body.message).toMatch(message);
    }
    expect(sim.payments).toHaveLength(broken.length);
    expect((await create()).status).toBe(200);
  });

  it('answers 500 naming the problem for an async rewrite, and leaves no unhandled rejection behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const asyncRewrites: Array<() => Promise<unknown>> = [async () => ({ status: 503 }), async () => Promise.reject(new Error('async boom'))];
      for (const rewrite of asyncRewrites) {
        sim.injectFault({ path: '/payments/gateways', kind: 'rewrite', rewrite: rewrite as never });
        const r = await simCall(sim, 'GET', '/payments/gateways', { token });
        expect({ status: r.status, code: r.body.code }).toEqual({ status: 500, code: 'INTERNAL_ERROR' });
        expect(r.body.message).toMatch(/rewrite must be synchronous/);
      }
      // a rejection nobody handles is reported after the microtasks of its turn
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('refuses a rewrite fault without a function, and a function on another kind', () => {
    expect(() => sim.injectFault({ kind: 'rewrite' })).toThrow(TypeError);
    expect(() => sim.injectFault({ kind: 'status', status: 500, rewrite: () => ({}) })).toThrow(/only applies to kind 'rewrite'/);
  });
});
