import 'reflect-metadata';
import type { PaymentEventEnvelope } from '../../lib/events/payment-event.types.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import {
  paymentSucceeded,
  postSigned,
  RELIABILITY_WEBHOOK_SECRET,
  type ReliabilityApp,
  startReliabilityApp,
  waitUntil,
} from '../support/reliability-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

const PER_PHASE = 20;

describe('reliability: Redis store outage mid-run', () => {
  let redis: TestRedisServer;
  let app: ReliabilityApp;
  let sim: PaymentServiceSimulator;

  beforeAll(async () => {
    redis = await startRedisServer();
    app = await startReliabilityApp('express', { redisUrl: redis.url });
    sim = new PaymentServiceSimulator({
      merchants: [
        { merchantId: 1, clientId: 'sandbox-client', clientSecret: 'sandbox-secret', webhookSecret: RELIABILITY_WEBHOOK_SECRET, mode: 'sandbox', webhookUrl: app.webhookUrl },
      ],
      // retries after 300 ms, 900 ms, 3.6 s...: the outage spans a few attempts, never all six
      webhookTimeScale: 1e-3,
    });
    await sim.start();
  });
  afterAll(async () => {
    await sim?.stop();
    await app?.close();
    await redis?.stop();
  });

  const send = (phase: string, i: number): PaymentEventEnvelope =>
    sim.sendEvent(1, 'payment.succeeded', {
      trxId: `trx_${phase}_${i}`,
      token: `tok_${phase}_${i}`,
      amount: '7.00000000',
      currency: 'USD',
      status: 'SUCCESS',
      custom: `order-${phase}-${i}`,
      merchantId: 1,
    });
  const answered = (id: string) => sim.deliveryLog.filter((r) => r.eventId === id && (r.status !== undefined || r.error !== undefined));

  it('answers 503 while Redis is down, then redeliveries succeed: nothing lost, nothing doubled', async () => {
    const beforeEvents = Array.from({ length: PER_PHASE }, (_, i) => send('before', i));
    const before = beforeEvents.map((e) => e.eventId);
    await sim.waitForDeliveries();
    expect(before.map((id) => app.effects.done.get(id))).toEqual(before.map(() => 1));

    await redis.stop();
    const during = Array.from({ length: PER_PHASE }, (_, i) => send('during', i).eventId);
    // direct deliveries during the outage: all refused with 503, none handled
    const direct = Array.from({ length: 5 }, () => paymentSucceeded('outage'));
    for (const event of direct) {
      const r = await postSigned(app.webhookUrl, event);
      expect(r).toMatchObject({ status: 503, json: { code: 'WEBHOOK_STORE_UNAVAILABLE' } });
    }
    // a copy of an event handled before the outage is not acknowledged either: the store cannot tell
    expect(await postSigned(app.webhookUrl, beforeEvents[0])).toMatchObject({ status: 503 });
    await waitUntil('every outage event got at least one answer', () => during.every((id) => answered(id).length > 0));
    // Snapshot BEFORE Redis comes back: everything answered so far was answered while it was down.
    const whileDown = during.flatMap(answered).map((r) => r.status ?? r.error);
    expect(whileDown.length).toBeGreaterThanOrEqual(PER_PHASE);
    expect(whileDown.filter((s) => s !== 503)).toEqual([]);
    expect(during.filter((id) => app.effects.attempts.has(id))).toEqual([]);

    await redis.restart();
    await sim.waitForDeliveries();
    for (const event of direct) {
      // the service's own retry of the direct deliveries
      await waitUntil(`${event.eventId} is acknowledged`, async () => (await postSigned(app.webhookUrl, event)).status === 200);
    }

    const states = new Map(sim.deliveries.map((d) => [d.eventId, d.state]));
    expect([...before, ...during].filter((id) => states.get(id) !== 'delivered')).toEqual([]);
    const all = [...before, ...during, ...direct.map((e) => e.eventId)];
    expect(all.map((id) => app.effects.done.get(id) ?? 0)).toEqual(all.map(() => 1));
    expect(app.effects.totalRuns).toBe(all.length);
  }, 90_000);
});
