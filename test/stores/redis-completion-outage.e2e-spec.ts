// A Redis restart while a handler runs (its data kept: append-only): the handler succeeds, but its
// completion cannot be recorded before the delivery is answered. The answer is still 2xx (a retry
// would run the handler again), and the completion is recorded once Redis is back, so the copy
// another instance answered 409 meanwhile, which the service retries later, finds the event handled.
import 'reflect-metadata';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

const LEASE_MS = 1500;

describe('inline mode: completion recorded after a Redis outage that began while the handler ran', () => {
  let redis: TestRedisServer;
  let a: WebhookApp;
  let b: WebhookApp;

  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    const payment = { redisUrl: redis.url, webhookLeaseMs: LEASE_MS };
    a = await startWebhookApp({ adapter: 'express', payment });
    b = await startWebhookApp({ adapter: 'express', payment });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  it.each([
    ['back within the lease', 0],
    ['back after the lease lapsed (the claim expired meanwhile)', LEASE_MS + 500],
  ])('Redis %s: the copy answered 409 during the run is a duplicate on its retry; the handler ran once', async (_, downMs) => {
    let open!: () => void;
    a.handlers.gate = new Promise<void>((resolve) => (open = resolve));
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const entered = a.handlers.entered;
    const first = postWebhook(a.url, event);
    await waitFor('the handler started', () => a.handlers.entered === entered + 1);
    expect(await postWebhook(b.url, event)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });

    await redis.stop();
    open();
    // answered 2xx: the handler's effects happened, and a retry would repeat them
    expect(await first).toMatchObject({ status: 200, json: { received: true } });
    a.handlers.gate = undefined;
    await sleep(downMs);
    await redis.restart();

    // the service's retry of the 409 comes minutes later, after the lease
    await waitFor('B reaches Redis again', async () => (await postWebhook(b.url, envelope())).status === 200);
    await sleep(LEASE_MS + 500);
    expect(await postWebhook(b.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(a.handlers.count('payment.*', id) + b.handlers.count('payment.*', id)).toBe(1);
  });
});

/** A store of the host's own that fails completions until `heal()` (claims and renewals still answer), counting them. */
class CompleteFailingStore extends MemoryWebhookEventStore {
  completeCalls = 0;
  private healed = false;
  heal(): void {
    this.healed = true;
  }
  override complete(key: string, claimToken: string, retentionMs: number): Promise<void> {
    this.completeCalls++;
    return this.healed ? super.complete(key, claimToken, retentionMs) : Promise.reject(new Error('backend refuses writes for now'));
  }
}

describe('inline mode: completions retried in the background', () => {
  it('keep their claim renewed meanwhile: a copy delivered after the lease is still a 409, and a duplicate once recorded', async () => {
    const store = new CompleteFailingStore();
    const app = await startWebhookApp({ adapter: 'express', payment: { store, webhookLeaseMs: 300 } });
    try {
      const event = envelope('payment.succeeded');
      expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { received: true } });
      await sleep(900); // three leases
      expect(await postWebhook(app.url, event)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
      store.heal();
      await waitFor('the completion is recorded', async () => (await postWebhook(app.url, event)).json?.duplicate === true);
      expect(app.handlers.count('payment.*', event.eventId as string)).toBe(1);
    } finally {
      await app.close();
    }
  });


  it('hold no timer that keeps the process alive, and end at app.close()', async () => {
    const store = new CompleteFailingStore();
    const app = await startWebhookApp({ adapter: 'express', payment: { store } });
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => postWebhook(app.url, envelope('payment.succeeded'))));
      expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200)); // the handlers ran: 2xx all the same
      await waitFor('the background retries run', () => store.completeCalls > 40 * 5);
      expect(timers() - before).toBeLessThan(5); // 40 loops pausing, none holding the process open
    } finally {
      await app.close();
    }
    const calls = store.completeCalls;
    await sleep(1500);
    expect(store.completeCalls).toBe(calls);
  });
});
