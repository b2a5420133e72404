import { createHmac } from 'node:crypto';
import { inspect } from 'node:util';
import { PaymentServiceSimulator, type SimulatedMerchant } from '../../lib/testing/index.js';
import { paymentBody, simCall, simToken, type SimCall } from '../support/simulator-http.js';
import { WebhookReceiver, type ReceivedWebhook } from '../support/simulator-receiver.js';

// Two sandbox merchants (to reach each other's resources) and one live merchant.
const A: SimulatedMerchant = { merchantId: 1, clientId: 'shop-a', clientSecret: 'secret-a', webhookSecret: 'whsec_a', mode: 'sandbox' };
const B: SimulatedMerchant = { merchantId: 2, clientId: 'shop-b', clientSecret: 'secret-b', webhookSecret: 'whsec_b', mode: 'sandbox' };
const C: SimulatedMerchant = { merchantId: 3, clientId: 'shop-c', clientSecret: 'secret-c', webhookSecret: 'whsec_c', mode: 'live' };

const tokenOf = (sim: PaymentServiceSimulator, m: SimulatedMerchant): Promise<string> =>
  simToken(sim, { clientId: m.clientId, clientSecret: m.clientSecret, mode: m.mode });

const credentials = (m: SimulatedMerchant, mode = m.mode) => ({ mode, body: { client_id: m.clientId, client_secret: m.clientSecret } });

function expectCode(r: SimCall, status: number, code: string): void {
  expect({ status: r.status, code: r.body?.code }).toEqual({ status, code });
}

/** Whether the `X-Service-Signature` of a received webhook is the HMAC of its raw body under `secret`. */
function signedWith(hook: ReceivedWebhook, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(hook.headers['x-service-signature']));
  return !!m && m[2] === createHmac('sha256', secret).update(`${m[1]}.${hook.raw}`).digest('hex');
}

describe('PaymentServiceSimulator with several merchants', () => {
  let sim: PaymentServiceSimulator;
  const receivers: WebhookReceiver[] = [];

  async function receiver(): Promise<{ receiver: WebhookReceiver; url: string }> {
    const r = new WebhookReceiver();
    receivers.push(r);
    return { receiver: r, url: await r.start() };
  }

  async function start(merchants: SimulatedMerchant[]): Promise<void> {
    sim = new PaymentServiceSimulator({ merchants });
    await sim.start();
  }

  async function pay(m: SimulatedMerchant, overrides: Record<string, unknown> = {}): Promise<string> {
    const r = await simCall(sim, 'POST', '/payment/create', { token: await tokenOf(sim, m), mode: m.mode, body: paymentBody(overrides) });
    expect(r.status).toBe(200);
    return r.body.data.trxId;
  }

  afterEach(async () => {
    await sim.stop();
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
  });

  it("gives each merchant's credentials a token for that merchant only, on its own environment only", async () => {
    await start([A, B, C]);
    const a = await tokenOf(sim, A);
    const b = await tokenOf(sim, B);
    const c = await tokenOf(sim, C);
    // the token acts as its own merchant
    const created = async (token: string, mode: 'sandbox' | 'live') =>
      (await simCall(sim, 'POST', '/payment/create', { token, mode, body: paymentBody() })).body.data.merchantId;
    expect([await created(a, 'sandbox'), await created(b, 'sandbox'), await created(c, 'live')]).toEqual([1, 2, 3]);
    expect(sim.payments.map((p) => [p.merchantId, p.mode])).toEqual([
      [1, 'sandbox'],
      [2, 'sandbox'],
      [3, 'live'],
    ]);

    // credentials on the other environment's base path
    expectCode(await simCall(sim, 'POST', '/authentication/token', credentials(A, 'live')), 400, 'PAY_1005');
    expectCode(await simCall(sim, 'POST', '/authentication/token', credentials(C, 'sandbox')), 400, 'PAY_1005');
    // one merchant's client id with another's secret
    expectCode(
      await simCall(sim, 'POST', '/authentication/token', { body: { client_id: A.clientId, client_secret: B.clientSecret } }),
      401,
      'PAY_1004',
    );
    // tokens on the other environment's base path
    expectCode(await simCall(sim, 'GET', '/payments/gateways', { token: a, mode: 'live' }), 400, 'PAY_2003');
    expectCode(await simCall(sim, 'GET', '/payments/gateways', { token: c, mode: 'sandbox' }), 400, 'PAY_2003');

    // switching one merchant off leaves the others alone
    sim.setMerchantActive(2, false);
    expectCode(await simCall(sim, 'GET', '/payments/gateways', { token: b }), 400, 'PAY_6001');
    expectCode(await simCall(sim, 'POST', '/authentication/token', credentials(B)), 400, 'PAY_6001');
    expect((await simCall(sim, 'GET', '/payments/gateways', { token: a })).status).toBe(200);
  });

  it("answers another merchant's payment, refund and payout exactly like an unknown one", async () => {
    await start([A, B]);
    const a = await tokenOf(sim, A);
    const b = await tokenOf(sim, B);
    const trxId = await pay(A, { custom: 'order-a sim:succeed' });
    const refundUid = (await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token: a, body: { amount: '1' } })).body.data.refundUid;
    const recipient = { account_number: '0123456789' };
    const payoutUid = (await simCall(sim, 'POST', '/payout', { token: a, body: { amount: '5', currency: 'USD', recipient } })).body.data
      .payoutUid;

    // merchant A reads its own
    expect((await simCall(sim, 'GET', `/payment/status?trx_id=${trxId}`, { token: a })).status).toBe(200);
    expect((await simCall(sim, 'GET', `/refund/${refundUid}`, { token: a })).status).toBe(200);
    expect((await simCall(sim, 'GET', `/payout/${payoutUid}`, { token: a })).status).toBe(200);

    // merchant B gets the not-found answers, identical to those for ids that do not exist
    const foreign = await simCall(sim, 'GET', `/payment/status?trx_id=${trxId}`, { token: b });
    const unknown = await simCall(sim, 'GET', '/payment/status?trx_id=trx_unknown', { token: b });
    expectCode(foreign, 404, 'PAY_2001');
    expect(foreign.body).toEqual(unknown.body);
    expectCode(await simCall(sim, 'POST', `/payment/${trxId}/refund`, { token: b, body: { amount: '1' } }), 404, 'PAY_2001');
    expectCode(await simCall(sim, 'GET', `/refund/${refundUid}`, { token: b }), 404, 'PAY_2005');
    expectCode(await simCall(sim, 'GET', `/payout/${payoutUid}`, { token: b }), 404, 'PAY_3002');

    // and changed nothing
    expect(sim.refunds).toHaveLength(1);
    expect(sim.payment(trxId)?.refundedAmount).toBe('1.00000000');
  });

  it('keeps idempotency keys and wallets per merchant', async () => {
    await start([A, B]);
    const body = paymentBody();
    const a = await simCall(sim, 'POST', '/payment/create', { token: await tokenOf(sim, A), body });
    const b = await simCall(sim, 'POST', '/payment/create', { token: await tokenOf(sim, B), body });
    expect(a.body.data.trxId).not.toBe(b.body.data.trxId);
    expect(sim.payments.map((p) => p.merchantId)).toEqual([1, 2]);

    const recipient = { account_number: '0123456789' };
    await simCall(sim, 'POST', '/payout', { token: await tokenOf(sim, B), body: { amount: '40', currency: 'USD', recipient } });
    expect([sim.walletBalance(1), sim.walletBalance(2)]).toEqual(['1000.00000000', '960.00000000']);
  });

  it('a scripted payout failure goes to the next payout even when it awaits approval (it fails when approved), never to a later one', async () => {
    await start([{ ...A, payoutApprovalRequired: true }, B]);
    const payout = async (m: SimulatedMerchant) =>
      (await simCall(sim, 'POST', '/payout', { token: await tokenOf(sim, m), body: { amount: '10', currency: 'USD', recipient: { iban: 'GB00' } } })).body.data.payoutUid as string;
    sim.scriptNextPayoutFailure('scripted for A');
    const approved = await payout(A);
    const other = await payout(B);
    expect(sim.payouts.map((p) => [p.merchantId, p.status])).toEqual([[1, 'PENDING_APPROVAL'], [2, 'SUCCESS']]);
    sim.approvePayout(approved);
    expect(sim.payouts.find((p) => p.payoutUid === approved)).toMatchObject({ status: 'FAILED', failureReason: 'scripted for A' });
    expect(sim.payouts.find((p) => p.payoutUid === other)?.failureReason).toBeUndefined();
    expect([sim.walletBalance(1), sim.walletBalance(2)]).toEqual(['1000.00000000', '990.00000000']);

    // rejected instead: the rejection's reason, and the script is used up with it
    sim.scriptNextPayoutFailure('scripted again');
    const rejected = await payout(A);
    sim.rejectPayout(rejected, 'compliance');
    const next = await payout(A);
    sim.approvePayout(next);
    expect(sim.payouts.slice(-2).map((p) => [p.status, p.failureReason])).toEqual([['FAILED', 'compliance'], ['SUCCESS', undefined]]);
  });

  it("delivers each merchant's events to its own URL only, signed with its own secret", async () => {
    const [ra, rb, rc] = [await receiver(), await receiver(), await receiver()];
    await start([
      { ...A, webhookUrl: ra.url },
      { ...B, webhookUrl: rb.url },
      { ...C, webhookUrl: rc.url },
    ]);
    await pay(A, { custom: 'sim:succeed' });
    await pay(B, { custom: 'sim:fail' });
    await pay(C, { custom: 'sim:succeed' });
    await pay(A);
    await sim.waitForDeliveries();

    expect(ra.receiver.types).toEqual(['payment.created', 'payment.succeeded', 'payment.created']);
    expect(rb.receiver.types).toEqual(['payment.created', 'payment.failed']);
    expect(rc.receiver.types).toEqual(['payment.created', 'payment.succeeded']);
    const secrets = ['whsec_a', 'whsec_b', 'whsec_c'];
    [ra, rb, rc].forEach(({ receiver: r }, i) => {
      for (const hook of r.received) {
        expect(hook.body.data.merchantId).toBe(i + 1);
        expect(hook.body.environment).toBe(i === 2 ? 'production' : 'sandbox');
        expect(secrets.map((s) => signedWith(hook, s))).toEqual(secrets.map((_, j) => j === i));
      }
    });
    // the delivery records say the same
    const urls = [ra.url, rb.url, rc.url];
    for (const d of sim.deliveries) {
      const event = sim.events.find((e) => e.eventId === d.eventId)!;
      expect((event.data as { merchantId: number }).merchantId).toBe(d.merchantId);
      expect(sim.deliveryLog.filter((r) => r.eventId === d.eventId).map((r) => r.url)).toEqual([urls[d.merchantId - 1]]);
    }
  });

  it("setWebhookUrl(id, url) moves one merchant's deliveries and leaves the others alone", async () => {
    const [ra, rb, moved] = [await receiver(), await receiver(), await receiver()];
    await start([
      { ...A, webhookUrl: ra.url },
      { ...B, webhookUrl: rb.url },
    ]);
    await pay(A);
    await pay(B);
    await sim.waitForDeliveries();

    sim.setWebhookUrl(1, moved.url);
    await pay(A);
    await pay(B);
    await sim.waitForDeliveries();
    expect([ra.receiver.received.length, moved.receiver.received.length, rb.receiver.received.length]).toEqual([1, 1, 2]);
    expect(moved.receiver.received[0].body.data.merchantId).toBe(1);
    expect(signedWith(moved.receiver.received[0], 'whsec_a')).toBe(true);

    // without a URL the merchant's events are recorded, not sent
    sim.setWebhookUrl(2, undefined);
    const trxId = await pay(B);
    await sim.waitForDeliveries();
    expect(rb.receiver.received).toHaveLength(2);
    const last = sim.events.at(-1)!;
    expect(last.data).toMatchObject({ trxId, merchantId: 2 });
    expect(sim.deliveries.find((d) => d.eventId === last.eventId)?.state).toBe('no-url');

    expect(() => sim.setWebhookUrl(9, moved.url)).toThrow(/Unknown merchant 9/);
  });

  it('sim.merchants and sim.merchant(id) report the settings in use, as copies', async () => {
    await start([A, { ...C, webhookUrl: 'http://127.0.0.1:9/hook', payoutApprovalRequired: true, subaccounts: [{ subaccountId: 's1' }] }]);
    expect(sim.merchants).toEqual([
      { ...A, webhookUrl: undefined, active: true, payoutApprovalRequired: false, subaccounts: [] },
      {
        ...C,
        webhookUrl: 'http://127.0.0.1:9/hook',
        active: true,
        payoutApprovalRequired: true,
        subaccounts: [{ subaccountId: 's1', autoPayout: true, failPayouts: false }],
      },
    ]);
    sim.setWebhookUrl(1, 'http://127.0.0.1:9/a');
    sim.setMerchantActive(3, false);
    expect(sim.merchant(1).webhookUrl).toBe('http://127.0.0.1:9/a');
    expect(sim.merchant(3).active).toBe(false);

    const copy = sim.merchant(1) as { clientSecret: string };
    copy.clientSecret = 'changed';
    expect(sim.merchant(1).clientSecret).toBe('secret-a');
    expect(() => sim.merchant(2)).toThrow(/Unknown merchant 2/);
  });

  it('lists the default merchant, and never shows secrets when the simulator is logged', async () => {
    sim = new PaymentServiceSimulator();
    expect(sim.merchants.map((m) => [m.merchantId, m.clientId, m.mode])).toEqual([[1, 'sandbox-client', 'sandbox']]);
    expect(inspect(sim)).toBe('PaymentServiceSimulator { url: not started, merchants: [1 (sandbox)] }');
    await sim.start();
    const shown = inspect(sim, { depth: 10 });
    expect(shown).toContain(sim.url);
    expect(shown).not.toMatch(/sandbox-secret|whsec_sandbox/);
  });

  it('serialises (JSON loggers, JSON.stringify) to the URL and merchant ids only, never a secret or logged request', async () => {
    sim = new PaymentServiceSimulator({ merchants: [A, C] });
    expect(JSON.parse(JSON.stringify({ sim }))).toEqual({ sim: { url: 'not started', merchants: [{ merchantId: 1, mode: 'sandbox' }, { merchantId: 3, mode: 'live' }] } });
    await sim.start();
    await tokenOf(sim, A); // the request log now holds a client secret
    const json = JSON.stringify(sim);
    expect(JSON.parse(json)).toEqual({ url: sim.url, merchants: [{ merchantId: 1, mode: 'sandbox' }, { merchantId: 3, mode: 'live' }] });
    expect(json).not.toMatch(/secret-a|secret-c|whsec_/);
  });
});
