// `redisTimeoutMs` on a real redis-server held with CLIENT PAUSE for longer than the default
// 2 s: an app with the default answers 503 (the service retries), an app that allows more
// waits the pause out and answers 200. Inline mode (the store's commands) and queue mode
// (the route's processed-check and job write) side by side.
import 'reflect-metadata';
import { Redis } from 'ioredis';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { sleep, startQueueApp, type QueueApp, waitFor } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// twice the default time-out, and well under the patient apps' 15 s
const PAUSE_MS = 4000;

/** A store of the host's own whose processed-check never answers (a hung backend). */
class HungReadStore extends MemoryWebhookEventStore {
  override isProcessed(): Promise<boolean> {
    return new Promise(() => undefined);
  }
}

describe('redisTimeoutMs: how long the module waits for a slow Redis', () => {
  let redis: TestRedisServer;
  let admin: Redis;
  const apps: Array<WebhookApp | QueueApp> = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(async () => {
    admin?.disconnect();
    await redis?.stop();
  });

  /** Holds every client's commands (this one's included) for `PAUSE_MS`. */
  const pauseRedis = () => admin.call('CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL');

  it('inline mode: the store waits up to redisTimeoutMs per command; the default gives up with 503 after 2 s', async () => {
    const patient = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, redisKeyPrefix: 'patient:', redisTimeoutMs: 15_000 } });
    apps.push(patient);
    const hasty = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, redisKeyPrefix: 'hasty:' } });
    apps.push(hasty);
    // both connections are up before Redis stalls
    for (const app of [patient, hasty]) expect((await postWebhook(app.url, envelope())).status).toBe(200);

    await pauseRedis();
    const [waited, refused] = await Promise.all([postWebhook(patient.url, envelope()), postWebhook(hasty.url, envelope())]);
    expect(refused).toMatchObject({ status: 503, json: { statusCode: 503, code: 'WEBHOOK_STORE_UNAVAILABLE' } });
    expect(waited).toMatchObject({ status: 200, json: { received: true } });
  });

  it('inline mode: a lease renewal that Redis refuses is tried again before the lease lapses, so a later copy still gets 409', async () => {
    const logger = new CollectingLogger();
    const app = await startWebhookApp({
      adapter: 'express',
      logger,
      payment: { redisUrl: redis.url, redisKeyPrefix: 'renewal:', redisTimeoutMs: 200, webhookLeaseMs: 1500 },
    });
    apps.push(app);
    let release!: () => void;
    app.handlers.gate = new Promise<void>((resolve) => (release = resolve));
    const event = envelope('payment.succeeded');
    const entered = app.handlers.entered;
    const first = postWebhook(app.url, event);
    await waitFor('the handler runs', () => app.handlers.entered === entered + 1);
    await sleep(600); // one renewal went through
    // Redis refuses writes for a moment (a paused Redis would run the renewal late, which renews too)
    await admin.call('CONFIG', 'SET', 'min-replicas-to-write', '1');
    try {
      await waitFor('a renewal failed', () => logger.lines.some((l) => l.message.startsWith('Could not renew the claim') && l.message.endsWith('retrying')), 5000);
    } finally {
      await admin.call('CONFIG', 'SET', 'min-replicas-to-write', '0');
    }
    await sleep(1500); // past the lease the claim had before the refusal
    const copy = await postWebhook(app.url, event);
    release();
    expect(copy).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    expect(await first).toMatchObject({ status: 200 });
    expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    expect(app.handlers.count('payment.*', event.eventId as string)).toBe(1);
  });

  it('queue mode: the route waits up to redisTimeoutMs for the job write; the default answers 503 after 2 s', async () => {
    const options = { queueWorker: false, redisUrl: redis.url };
    const patient = await startQueueApp(redis.url, { payment: { ...options, redisKeyPrefix: 'q-patient:', redisTimeoutMs: 15_000 } });
    apps.push(patient);
    const hasty = await startQueueApp(redis.url, { payment: { ...options, redisKeyPrefix: 'q-hasty:' } });
    apps.push(hasty);
    for (const app of [patient, hasty]) expect(await postWebhook(app.url, envelope())).toMatchObject({ status: 200, json: { queued: true } });

    await pauseRedis();
    const [waited, refused] = await Promise.all([postWebhook(patient.url, envelope()), postWebhook(hasty.url, envelope())]);
    expect(refused).toMatchObject({ status: 503, json: { statusCode: 503, code: 'WEBHOOK_QUEUE_UNAVAILABLE' } });
    expect(waited).toMatchObject({ status: 200, json: { received: true, queued: true } });
  });

  it('queue mode: the processed-check of any store is given up after half of redisTimeoutMs, so a hung store is neither a hung request nor a 503', async () => {
    const app = await startQueueApp(redis.url, { payment: { queueWorker: false, store: new HungReadStore(), redisTimeoutMs: 300 } });
    apps.push(app);
    const startedAt = Date.now();
    // "not processed" after 150 ms, then queued (the worker's claim decides)
    expect(await postWebhook(app.url, envelope())).toMatchObject({ status: 200, json: { received: true, queued: true } });
    expect(Date.now() - startedAt).toBeLessThan(1_000);
  });
});
