import 'reflect-metadata';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// Two instances of the app (one on Express, one on Fastify, on different ports) share one
// real Redis through PAYMENT_REDIS_URL-style configuration, as a deployment would.
describe('webhooks with RedisWebhookEventStore shared by two app instances', () => {
  let redis: TestRedisServer;
  let a: WebhookApp;
  let b: WebhookApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    a = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url } });
    b = await startWebhookApp({ adapter: 'fastify', payment: { redisUrl: redis.url } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });
  afterEach(() => {
    for (const app of [a, b]) {
      app.handlers.gate = undefined;
    }
  });

  const handled = (id: string): number => a.handlers.count('payment.*', id) + b.handlers.count('payment.*', id);

  it('handles each event once in total when both instances receive every delivery', async () => {
    const events = Array.from({ length: 20 }, () => envelope('payment.succeeded'));
    // every event reaches both instances at the same time (duplicate delivery across a load balancer)
    const first = await Promise.all(events.map((e) => Promise.all([postWebhook(a.url, e), postWebhook(b.url, e)])));
    for (const [i, pair] of first.entries()) {
      for (const r of pair) expect([200, 409]).toContain(r.status);
      // a 409 is retried by the service later: redeliver to the instance that answered it
      for (const [j, r] of pair.entries()) {
        if (r.status === 409) {
          const retry = await postWebhook((j === 0 ? a : b).url, events[i]);
          expect(retry).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
        }
      }
      expect(pair.filter((r) => r.status === 200 && !r.json.duplicate)).toHaveLength(1);
      expect(handled(events[i]!.eventId as string)).toBe(1);
    }
    // and later duplicates to either instance are acknowledged without running handlers
    for (const e of events.slice(0, 5)) {
      expect(await postWebhook(b.url, e)).toMatchObject({ status: 200, json: { duplicate: true } });
      expect(await postWebhook(a.url, e)).toMatchObject({ status: 200, json: { duplicate: true } });
      expect(handled(e.eventId as string)).toBe(1);
    }
  });

  it('answers 503 while Redis is down (no handler call) and recovers when it is back', async () => {
    await redis.stop();
    const e = envelope('payment.succeeded');
    for (const app of [a, b]) {
      const r = await postWebhook(app.url, e);
      expect(r.status).toBe(503);
      expect(r.json).toEqual({ statusCode: 503, code: 'WEBHOOK_STORE_UNAVAILABLE', message: expect.any(String) });
    }
    expect(handled(e.eventId as string)).toBe(0);

    await redis.restart();
    // the clients reconnect by themselves; the service's next retry then succeeds
    await waitFor('the store answers again', async () => (await postWebhook(a.url, e)).status !== 503);
    expect(handled(e.eventId as string)).toBe(1);
    expect(await postWebhook(b.url, e)).toMatchObject({ status: 200, json: { duplicate: true } });
    expect(handled(e.eventId as string)).toBe(1);
  });

  it('answers 2xx when the handlers succeeded but Redis died before completion could be recorded', async () => {
    let open!: () => void;
    a.handlers.gate = new Promise<void>((resolve) => (open = resolve));
    const e = envelope('payment.succeeded');
    const entered = a.handlers.entered;
    const pending = postWebhook(a.url, e);
    // the claim is taken (Redis up) and the handler waits on the gate
    await waitFor('the handler ran', () => a.handlers.entered > entered);
    expect(await postWebhook(b.url, e)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    await redis.stop();
    open();
    // The handler ran: answering non-2xx would make the service run it again later.
    expect(await pending).toMatchObject({ status: 200, json: { received: true } });
    expect(handled(e.eventId as string)).toBe(1);
    await redis.restart();
    await waitFor('a delivery is accepted again', async () => (await postWebhook(a.url, envelope())).status === 200);
  });
});
