import 'reflect-metadata';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { RELIABILITY_WEBHOOK_SECRET, type ReliabilityApp, seededRandom, shuffle, startReliabilityApp } from '../support/reliability-app.js';

const EVENTS = 100;
const FLAKY = 30;

describe('reliability: flaky handlers (30% fail on the first attempt, the simulator redelivers)', () => {
  let app: ReliabilityApp;
  let sim: PaymentServiceSimulator;

  beforeAll(async () => {
    app = await startReliabilityApp('express');
    sim = new PaymentServiceSimulator({
      merchants: [
        { merchantId: 1, clientId: 'sandbox-client', clientSecret: 'sandbox-secret', webhookSecret: RELIABILITY_WEBHOOK_SECRET, mode: 'sandbox', webhookUrl: app.webhookUrl },
      ],
      // spec 6.2 schedule scaled down: 5 min → 30 ms (all six attempts span ~10 s, ample on a loaded machine)
      webhookTimeScale: 1e-4,
    });
    await sim.start();
  });
  afterAll(async () => {
    await sim?.stop();
    await app?.close();
  });

  it('handles every event exactly once and abandons none', async () => {
    const flakyIndexes = new Set(shuffle([...Array(EVENTS).keys()], seededRandom(6)).slice(0, FLAKY));
    const sent = Array.from({ length: EVENTS }, (_, i) =>
      sim.sendEvent(1, 'payment.succeeded', {
        trxId: `trx_flaky_${i}`,
        token: `tok_flaky_${i}`,
        amount: '5.00000000',
        currency: 'USD',
        status: 'SUCCESS',
        custom: flakyIndexes.has(i) ? `flaky:order-${i}` : `order-${i}`,
        merchantId: 1,
      }),
    );
    await sim.waitForDeliveries();

    const ids = sent.map((e) => e.eventId);
    expect(new Set(ids).size).toBe(EVENTS);
    // effects: exactly one completed run per event
    expect(ids.map((id) => app.effects.done.get(id) ?? 0)).toEqual(ids.map(() => 1));
    expect(app.effects.totalRuns).toBe(EVENTS);
    // the injected failures really happened, once per flaky event
    expect(new Set(app.effects.failures)).toEqual(new Set([...flakyIndexes].map((i) => ids[i])));
    expect(app.effects.failures).toHaveLength(FLAKY);

    // the simulator's view: every delivery ended delivered, nothing abandoned
    const states = new Map(sim.deliveries.map((d) => [d.eventId, d.state]));
    expect(ids.filter((id) => states.get(id) !== 'delivered')).toEqual([]);
    for (const [i, id] of ids.entries()) {
      const attempts = sim.deliveryLog.filter((r) => r.eventId === id);
      expect(attempts.at(-1)?.status).toBe(200);
      // a failed handler was answered with a non-2xx (so the service retried), never with 2xx
      if (flakyIndexes.has(i)) {
        expect(attempts.length).toBeGreaterThanOrEqual(2);
        expect(attempts[0]!.status === undefined || attempts[0]!.status >= 500).toBe(true);
      }
      expect(attempts.filter((r) => r.status !== undefined && r.status >= 200 && r.status < 300)).toHaveLength(1);
    }
  }, 60_000);
});
