import 'reflect-metadata';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import {
  paymentSucceeded,
  RELIABILITY_WEBHOOK_SECRET,
  postSigned,
  type ReliabilityApp,
  runPool,
  seededRandom,
  shuffle,
  startReliabilityApp,
} from '../support/reliability-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { MOUNTED_ADAPTERS } from '../support/webhooks-app.js';

const EVENTS = 200;
const COPIES = 10;
const CONNECTIONS = 50;

/**
 * Sends every copy (shuffled, `CONNECTIONS` in flight), then, like the service, redelivers
 * each event that got no 2xx until one does. Returns the statuses of the storm itself.
 */
async function storm(targets: ReliabilityApp[], seed: number): Promise<number[]> {
  const events = Array.from({ length: EVENTS }, () => paymentSucceeded('storm'));
  const copies = shuffle(
    events.flatMap((event) => Array.from({ length: COPIES }, () => event)),
    seededRandom(seed),
  );
  const acked = new Set<string>();
  const statuses = await runPool(copies, CONNECTIONS, async (event, i) => {
    const r = await postSigned(targets[i % targets.length]!.webhookUrl, event);
    if (r.status >= 200 && r.status < 300) acked.add(event.eventId);
    return r.status;
  });
  for (const event of events) {
    for (let attempt = 0; !acked.has(event.eventId); attempt++) {
      if (attempt > 50) throw new Error(`${event.eventId} was never acknowledged`);
      const r = await postSigned(targets[attempt % targets.length]!.webhookUrl, event);
      if (r.status >= 200 && r.status < 300) acked.add(event.eventId);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  return statuses;
}

function expectOncePerEvent(apps: ReliabilityApp[]): void {
  const perEvent = new Map<string, number>();
  for (const app of apps) for (const [id, n] of app.effects.done) perEvent.set(id, (perEvent.get(id) ?? 0) + n);
  expect(perEvent.size).toBe(EVENTS);
  expect([...perEvent.values()].filter((n) => n !== 1)).toEqual([]);
  expect(apps.reduce((n, app) => n + app.effects.totalRuns, 0)).toBe(EVENTS);
}

describe('reliability: duplicate storm (200 events × 10 copies, shuffled, 50 connections)', () => {
  it.each(MOUNTED_ADAPTERS)('runs each handler exactly once per eventId on one %s instance, %s (memory store)', async (adapter, mount) => {
    const app = await startReliabilityApp(adapter, {}, false, mount);
    try {
      const statuses = await storm([app], (adapter === 'express' ? 1 : 2) + (mount === 'host route' ? 10 : 0));
      // a copy racing the first delivery gets 409 (retried by the service), never an error
      expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([]);
      expectOncePerEvent([app]);
    } finally {
      await app.close();
    }
  }, 120_000);

  describe('two instances sharing RedisWebhookEventStore', () => {
    let redis: TestRedisServer;
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it("runs each handler exactly once in total across an Express instance (module route) and a Fastify instance (host's route)", async () => {
      const a = await startReliabilityApp('express', { redisUrl: redis.url });
      const b = await startReliabilityApp('fastify', { redisUrl: redis.url }, false, 'host route');
      try {
        const statuses = await storm([a, b], 3);
        expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([]);
        expectOncePerEvent([a, b]);
        // both instances really took part
        expect(a.effects.totalRuns).toBeGreaterThan(0);
        expect(b.effects.totalRuns).toBeGreaterThan(0);
      } finally {
        await a.close();
        await b.close();
      }
    }, 120_000);
  });

  it('the simulator sending 3 concurrent extra copies of every event, out of order: one handler run per eventId', async () => {
    const app = await startReliabilityApp('fastify');
    const sim = new PaymentServiceSimulator({
      merchants: [
        { merchantId: 1, clientId: 'sandbox-client', clientSecret: 'sandbox-secret', webhookSecret: RELIABILITY_WEBHOOK_SECRET, mode: 'sandbox', webhookUrl: app.webhookUrl },
      ],
      webhookTimeScale: 1e-4,
    });
    await sim.start();
    try {
      sim.setDeliveryFaults({ duplicate: 3, concurrentDuplicates: true, outOfOrder: true });
      const sent = Array.from({ length: 50 }, (_, i) =>
        sim.sendEvent(1, i % 2 ? 'payment.succeeded' : 'payment.failed', {
          trxId: `trx_simdup_${i}`,
          token: `tok_simdup_${i}`,
          amount: '3.00000000',
          currency: 'USD',
          status: i % 2 ? 'SUCCESS' : 'REJECTED',
          custom: `order-simdup-${i}`,
          merchantId: 1,
        }),
      );
      await sim.waitForDeliveries();
      const ids = sent.map((e) => e.eventId);
      // every copy went out, and every event was acknowledged
      expect(sim.deliveryLog.filter((r) => r.duplicate).length).toBeGreaterThanOrEqual(ids.length * 3);
      const states = new Map(sim.deliveries.map((d) => [d.eventId, d.state]));
      expect(ids.filter((id) => states.get(id) !== 'delivered')).toEqual([]);
      expect(ids.map((id) => app.effects.done.get(id) ?? 0)).toEqual(ids.map(() => 1));
      expect(app.effects.totalRuns).toBe(ids.length);
    } finally {
      await sim.stop();
      await app.close();
    }
  }, 120_000);
});
