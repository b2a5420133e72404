// Redis (with its data persisted) goes away for longer than a claim's lease while a handler runs.
// Nobody could claim the event meanwhile, so the running delivery's renewal keeps trying past the
// lease and takes the key back once Redis answers: a copy arriving after that is held off (409).
import 'reflect-metadata';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

const LEASE_MS = 1_000;

describe('a Redis outage longer than the lease while a handler runs', () => {
  let redis: TestRedisServer;
  let w: WebhookApp;
  afterEach(async () => {
    await w?.close();
    await redis?.stop();
  });

  it('the running delivery takes its claim back once Redis answers: a later copy gets 409, the handler runs once', async () => {
    redis = await startRedisServer({ appendOnly: true });
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: redis.url, webhookLeaseMs: LEASE_MS, redisTimeoutMs: 300 } });
    let release!: () => void;
    w.handlers.gate = new Promise<void>((resolve) => (release = resolve));
    const event = envelope();
    const first = postWebhook(w.url, event);
    await waitFor('the handler started', () => w.handlers.entered === 1);
    await redis.stop();
    await sleep(LEASE_MS * 2.5); // the lease lapses while nothing can renew it
    await redis.restart();
    await waitFor('the claim renewed again', () => logger.lines.some((line) => line.message.includes('is renewed again')), 10_000);
    const copy = await postWebhook(w.url, event);
    expect(copy).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    release();
    expect(await first).toMatchObject({ status: 200 });
    expect(w.handlers.entered).toBe(1);
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    const warnings = logger.lines.filter((line) => line.message.startsWith('Could not renew')).map((line) => line.message);
    expect(warnings.at(-1)).toContain('its lease has lapsed, so another delivery may run it again; still trying to take it back');
  }, 30_000);
});
