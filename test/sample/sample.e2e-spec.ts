// The sample shop as a user runs it: compiled against the package name, started as its own
// Node process, talking to the simulator over HTTP, keeping its state in a SQLite file.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { reviewDemoRun } from '../../sample/src/demo-report.js';
import {
  buildSampleStage,
  childEnv,
  queryShopDb,
  runToExit,
  type SampleStage,
  type ShopProcess,
  startShop,
} from '../support/sample-stage.js';

// Building the staged package and sample takes most of the time (two tsc runs).
const SLOW = 120_000;

const MERCHANT = {
  merchantId: 7,
  clientId: 'sample-shop',
  clientSecret: 'sample-shop-secret-0123456789',
  webhookSecret: 'whsec_sample_shop_0123456789',
  mode: 'sandbox' as const,
};

interface OrderView {
  id: string;
  status: string;
  amount: string;
  currency: string;
  trxId: string | null;
  refundUid: string | null;
  fulfilments: number;
}

interface EventView {
  eventId: string;
  eventType: string;
  outcome: string;
  timesSeen: number;
}

async function call<T>(method: 'GET' | 'POST', url: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function until<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('sample shop', () => {
  let stage: SampleStage;

  beforeAll(async () => {
    stage = await buildSampleStage();
  }, SLOW);

  afterAll(async () => {
    await stage?.cleanup();
  });

  it('npm start demo: exits 0 with the transcript, order paid and fulfilled exactly once', async () => {
    const result = await runToExit(join(stage.dir, 'sample', 'dist', 'demo.js'), stage.dir, childEnv({}), 60_000);
    const out = result.stdout;
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: expect.not.stringContaining('FAILED') });
    expect(out).toMatch(/1\. Order placed: ord_[0-9a-f]+, 26\.99000000 USD, status AWAITING_PAYMENT; payment \S+ opened/);
    expect(out).toMatch(/payment\.succeeded\s+evt_\S+\s+attempt 1\n\s+→ 200 handled: status SUCCESS: order PAID and fulfilled/);
    expect(out).toMatch(/duplicate copy\n\s+→ 200 \{"received":true,"duplicate":true\}: duplicate ignored by the module/);
    expect(out).toMatch(/payment\.(created|pending)\s+evt_\S+\s+attempt 1\n\s+→ 200 handled: status SUCCESS: order already PAID, nothing to do \(arrived out of order/);
    expect(out).toMatch(/3\. Order ord_[0-9a-f]+ is PAID .*fulfilled 1 time\(s\), counted in SQLite/);
    expect(out).toMatch(/^OK: 6 deliveries, 3 events handled once each, 3 duplicates ignored, 2 out-of-order events/m);
    // Credentials are generated per run and never printed.
    expect(out).not.toMatch(/whsec_[0-9a-f]{8,}/);
    expect(out.indexOf('payment.succeeded')).toBeLessThan(out.indexOf('payment.created'));
  }, SLOW);

  describe('against a simulator, across a restart on the same SQLite file', () => {
    const sim = new PaymentServiceSimulator({ merchants: [MERCHANT], confirmationDelayMs: 30 });
    let dataDir: string;
    let shop: ShopProcess | undefined;

    const env = (): NodeJS.ProcessEnv =>
      childEnv({
        PAYMENT_BASE_URL: sim.url,
        PAYMENT_ENVIRONMENT: 'sandbox',
        PAYMENT_CLIENT_ID: MERCHANT.clientId,
        PAYMENT_CLIENT_SECRET: MERCHANT.clientSecret,
        PAYMENT_WEBHOOK_SECRET: MERCHANT.webhookSecret,
        SHOP_DATABASE_PATH: join(dataDir, 'shop.sqlite'),
        SHOP_PORT: '0',
        SHOP_HOST: '127.0.0.1',
      });

    /** Places an order the simulator pays at once, and waits until the shop has it PAID. */
    async function paidOrder(shopUrl: string, amount: string): Promise<{ order: OrderView }> {
      sim.scriptNextPayment('succeed');
      const placed = await call<{ order: OrderView }>('POST', `${shopUrl}/orders`, { amount, currency: 'USD' });
      const id = placed.body.order.id;
      await until(async () => {
        const { body } = await call<OrderView>('GET', `${shopUrl}/orders/${id}`);
        return body.status === 'PAID' ? body : undefined;
      }, 'order PAID');
      return placed.body;
    }

    async function boot(): Promise<ShopProcess> {
      const started = await startShop(stage.dir, env());
      sim.setWebhookUrl(MERCHANT.merchantId, `${started.url}/payments/webhook`);
      return started;
    }

    beforeAll(async () => {
      await sim.start();
      dataDir = await mkdtemp(join(tmpdir(), 'sample-shop-data-'));
    });

    afterAll(async () => {
      await shop?.stop();
      await sim.stop();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('pays an order once, keeps it across a restart, and a redelivered payment.succeeded does not fulfil twice', async () => {
      shop = await boot();
      sim.setDeliveryFaults({ duplicate: 1, outOfOrder: true });
      sim.scriptNextPayment('pending-then-succeed');

      const placed = await call<{ order: OrderView; payment: { trxId: string; token: string; pending: boolean } }>(
        'POST',
        `${shop.url}/orders`,
        { items: [{ sku: 'MUG', quantity: 3, unitPrice: '7.10' }], currency: 'EUR' },
      );
      expect(placed.status).toBe(201);
      expect(placed.body.order).toMatchObject({ status: 'AWAITING_PAYMENT', amount: '21.30000000', currency: 'EUR' });
      expect(placed.body.payment.pending).toBe(true);
      expect(placed.body.payment.token).toEqual(expect.any(String));
      const orderId = placed.body.order.id;
      const trxId = placed.body.payment.trxId;
      // The payment was created with the order as `custom` and the order's idempotency key.
      expect(sim.payment(trxId)).toMatchObject({ custom: orderId, idempotencyKey: `order-${orderId}`, amount: '21.30000000' });

      const url = shop.url;
      await until(async () => {
        const { body } = await call<OrderView>('GET', `${url}/orders/${orderId}`);
        return body.status === 'PAID' ? body : undefined;
      }, 'order PAID');
      await sim.waitForDeliveries();

      const before = await call<OrderView>('GET', `${shop.url}/orders/${orderId}`);
      expect(before.body).toMatchObject({ status: 'PAID', trxId, fulfilments: 1 });
      // Every delivery (copies included) was answered 2xx.
      expect(sim.deliveryLog.every((d) => d.status === 200)).toBe(true);
      // So far the run is what `npm start` accepts (its checks, on this real delivery log).
      const firstAudit = await call<EventView[]>('GET', `${shop.url}/orders/${orderId}/events`);
      const firstRun = reviewDemoRun(sim.deliveryLog, firstAudit.body, before.body);
      expect(firstRun.problems).toEqual([]);
      expect(firstRun.summary).toEqual({ handled: 3, duplicatesIgnored: 3, lateIgnored: 2, failed: 0 });

      // Restart: a new process on the same file. The module's memory store starts empty.
      await shop.stop();
      shop = await boot();
      const after = await call<OrderView>('GET', `${shop.url}/orders/${orderId}`);
      expect(after.body).toEqual(before.body);

      const succeeded = sim.events.find((e) => e.eventType === 'payment.succeeded' && (e.data as { trxId?: string }).trxId === trxId);
      expect(succeeded).toBeDefined();
      const record = await sim.retrigger(succeeded!.eventId); // the portal's "re-send"
      expect(record.status).toBe(200);

      const final = await call<OrderView>('GET', `${shop.url}/orders/${orderId}`);
      expect(final.body).toMatchObject({ status: 'PAID', fulfilments: 1 });
      const events = await call<EventView[]>('GET', `${shop.url}/orders/${orderId}/events`);
      const audit = events.body.find((e) => e.eventId === succeeded!.eventId);
      // The new process did run the handler (its store forgot the id); the shop's own idempotency held.
      expect(audit).toMatchObject({ outcome: 'status SUCCESS: order PAID and fulfilled', timesSeen: 2 });
      expect(events.body.map((e) => e.eventType).sort()).toEqual(['payment.created', 'payment.pending', 'payment.succeeded']);
      // Straight from the file: one fulfilment row.
      const rows = await queryShopDb<{ n: number }>(join(dataDir, 'shop.sqlite'), 'SELECT COUNT(*) AS n FROM fulfilments WHERE order_id = ?', [orderId]);
      expect(rows).toEqual([{ n: 1 }]);

      // `npm start`'s checks reject this log: the re-sent event reached a handler a second time
      // instead of being answered duplicate: true, although the other copies were.
      const rerun = reviewDemoRun(sim.deliveryLog, events.body, final.body);
      expect(rerun.summary).toMatchObject({ handled: 3, duplicatesIgnored: 3 });
      expect(rerun.problems).toEqual([
        `delivery 7 (payment.succeeded ${succeeded!.eventId}) repeats a handled event but was not answered duplicate: true`,
        `event ${succeeded!.eventId} (payment.succeeded) was handled 2 times, expected exactly once`,
      ]);
    }, SLOW);

    it('does not fulfil on a payment.succeeded whose status is still PENDING, and ends orders the service rejected (failed, cancelled, expired)', async () => {
      shop ??= await boot();
      sim.setDeliveryFaults({ duplicate: 0, outOfOrder: false });

      sim.scriptNextPayment('manual');
      const a = await call<{ order: OrderView; payment: { trxId: string } }>('POST', `${shop.url}/orders`, { amount: '5.00', currency: 'USD' });
      expect(a.status).toBe(201);
      // A forged-looking / premature event: signed correctly, but the service still says PENDING.
      const premature = sim.sendEvent(MERCHANT.merchantId, 'payment.succeeded', {
        trxId: a.body.payment.trxId,
        custom: a.body.order.id,
        amount: '5.00000000',
        currency: 'USD',
        status: 'SUCCESS',
      });
      await sim.waitForDeliveries();
      const attempts = sim.deliveryLog.filter((d) => d.eventId === premature.eventId);
      expect(attempts.length).toBe(6); // every attempt answered non-2xx, so the service kept retrying
      expect(attempts.every((d) => d.status === 500)).toBe(true);
      const stillWaiting = await call<OrderView>('GET', `${shop.url}/orders/${a.body.order.id}`);
      expect(stillWaiting.body).toMatchObject({ status: 'AWAITING_PAYMENT', fulfilments: 0 });

      for (const [outcome, status] of [
        ['fail', 'PAYMENT_FAILED'],
        ['cancel', 'PAYMENT_CANCELLED'],
        ['expire', 'PAYMENT_EXPIRED'],
      ] as const) {
        sim.scriptNextPayment(outcome);
        const b = await call<{ order: OrderView }>('POST', `${shop.url}/orders`, { amount: '9.99', currency: 'USD' });
        await sim.waitForDeliveries();
        const ended = await call<OrderView>('GET', `${shop.url}/orders/${b.body.order.id}`);
        expect(ended.body).toMatchObject({ status, fulfilments: 0 });
      }
    }, SLOW);

    it('fulfils from the signed event amount when the status answer carries only data.status', async () => {
      shop ??= await boot();
      sim.setDeliveryFaults({ duplicate: 0, outOfOrder: false });
      // every status answer of this test is reduced to what the spec publishes
      sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'rewrite', times: 1_000, rewrite: (body) => ({ body: { status: 'success', data: { status: body.data?.status } } }) });
      try {
        sim.scriptNextPayment('succeed');
        const placed = await call<{ order: OrderView }>('POST', `${shop.url}/orders`, { amount: '4.20', currency: 'USD' });
        expect(placed.status).toBe(201);
        await sim.waitForDeliveries();
        const paid = await call<OrderView>('GET', `${shop.url}/orders/${placed.body.order.id}`);
        expect(paid.body).toMatchObject({ status: 'PAID', fulfilments: 1 });
      } finally {
        sim.clearFaults();
      }
    }, SLOW);

    it('refunds a paid order once and records the refund outcome', async () => {
      shop ??= await boot();
      const placed = await paidOrder(shop.url, '12.00');
      const id = placed.order.id;

      const [first, second] = await Promise.all([
        call<OrderView & { code?: string }>('POST', `${shop.url}/orders/${id}/refund`, { reason: 'customer changed mind' }),
        call<OrderView & { code?: string }>('POST', `${shop.url}/orders/${id}/refund`, { reason: 'customer changed mind' }),
      ]);
      expect([first.status, second.status].sort()).toEqual([202, 409]);
      expect((first.status === 409 ? first : second).body.code).toBe('ORDER_STATE_CONFLICT');
      await sim.waitForDeliveries();
      expect(sim.refunds.filter((r) => r.trxId === placed.order.trxId)).toHaveLength(1);
      const refunded = await call<OrderView>('GET', `${shop.url}/orders/${id}`);
      expect(refunded.body).toMatchObject({ status: 'REFUNDED', refundUid: expect.any(String), fulfilments: 1 });
    }, SLOW);

    it('a refund that never reached the service (simulator down) leaves the order PAID, and a later refund goes through', async () => {
      shop ??= await boot();
      sim.setDeliveryFaults({ duplicate: 0, outOfOrder: false });
      const placed = await paidOrder(shop.url, '8.00');
      const id = placed.order.id;
      await sim.waitForDeliveries();

      // Simulator down, shop restarted: with no pooled socket to reuse, the refund's connection
      // is refused, so surely nothing reached the service. (A socket kept alive from before the
      // stop could instead fail with a reset, which may have been read: a different case.)
      await sim.stop();
      let down: { status: number; body: { code?: string; paymentErrorCode?: string; message?: string } };
      try {
        await shop.stop();
        shop = await boot();
        down = await call('POST', `${shop.url}/orders/${id}/refund`, { reason: 'outage' });
      } finally {
        await sim.start(); // same port; the other tests need it
      }
      expect(down.status).toBe(502);
      expect(down.body).toMatchObject({ code: 'PAYMENT_UNAVAILABLE', paymentErrorCode: 'NETWORK_ERROR' });
      expect(down.body.message).toMatch(/Nothing was refunded.*PAID again/);
      expect(sim.refunds.filter((r) => r.trxId === placed.order.trxId)).toHaveLength(0);
      // Not stuck in REFUND_PENDING: no refund.* event would ever come for a refund never sent.
      const stillPaid = await call<OrderView>('GET', `${shop.url}/orders/${id}`);
      expect(stillPaid.body).toMatchObject({ status: 'PAID', refundUid: null });

      const retried = await call<OrderView>('POST', `${shop.url}/orders/${id}/refund`, { reason: 'outage' });
      expect(retried.status).toBe(202);
      await sim.waitForDeliveries();
      expect(sim.refunds.filter((r) => r.trxId === placed.order.trxId)).toHaveLength(1);
      const refunded = await call<OrderView>('GET', `${shop.url}/orders/${id}`);
      expect(refunded.body).toMatchObject({ status: 'REFUNDED', refundUid: expect.any(String) });
    }, SLOW);

    it('a refund answered with a redirect (the service may have acted) stays REFUND_PENDING: a second refund is refused, and the refund.* event ends it', async () => {
      shop ??= await boot();
      const placed = await paidOrder(shop.url, '9.00');
      const id = placed.order.id;
      await sim.waitForDeliveries();
      sim.injectFault({ path: /^\/payment\/[^/]+\/refund$/, kind: 'rewrite', rewrite: () => ({ status: 303 }) });
      const answered = await call<{ code?: string; message?: string }>('POST', `${shop.url}/orders/${id}/refund`, { reason: 'redirected' });
      expect(answered.status).toBe(502);
      expect(answered.body.message).toMatch(/outcome unknown/);
      const again = await call<{ code?: string }>('POST', `${shop.url}/orders/${id}/refund`, { reason: 'redirected' });
      expect(again).toMatchObject({ status: 409, body: { code: 'ORDER_STATE_CONFLICT' } });
      await sim.waitForDeliveries();
      expect(sim.refunds.filter((r) => r.trxId === placed.order.trxId)).toHaveLength(1);
      const refunded = await call<OrderView>('GET', `${shop.url}/orders/${id}`);
      expect(refunded.body).toMatchObject({ status: 'REFUNDED' });
    }, SLOW);

    it('records payout outcomes; a late payout.created does not undo a final one', async () => {
      shop ??= await boot();
      sim.setDeliveryFaults({ duplicate: 0, outOfOrder: false });
      const data = { payoutUid: 'po_sample_1', amount: '40.00000000', currency: 'USD' };
      sim.sendEvent(MERCHANT.merchantId, 'payout.succeeded', { ...data, status: 'SUCCESS' });
      sim.sendEvent(MERCHANT.merchantId, 'payout.created', { ...data, status: 'PENDING' });
      sim.sendEvent(MERCHANT.merchantId, 'payout.failed', { payoutUid: 'po_sample_2', failureReason: 'Recipient account closed' });
      await sim.waitForDeliveries();
      const rows = await queryShopDb(join(dataDir, 'shop.sqlite'), 'SELECT payout_uid, status, amount, failure_reason FROM payouts ORDER BY payout_uid');
      expect(rows).toEqual([
        { payout_uid: 'po_sample_1', status: 'SUCCESS', amount: '40.00000000', failure_reason: null },
        { payout_uid: 'po_sample_2', status: 'FAILED', amount: null, failure_reason: 'Recipient account closed' },
      ]);
    }, SLOW);

    it('answers bad orders with 400 and a stable code', async () => {
      shop ??= await boot();
      const res = await call<{ code: string; message: string }>('POST', `${shop.url}/orders`, { amount: '1.0.0', currency: 'usd' });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_ORDER');
      const missing = await call<{ code: string }>('GET', `${shop.url}/orders/ord_nope`);
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('ORDER_NOT_FOUND');
    }, SLOW);
  });
});
