import 'reflect-metadata';
import { PaymentModule } from '../../lib/payment.module.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET, type WebhookApp } from '../support/webhooks-app.js';

/** The store's warnings about the server's eviction policy. */
const evictionWarnings = (logger: CollectingLogger) =>
  logger.lines.filter((l) => l.context === 'RedisWebhookEventStore' && l.message.includes('maxmemory-policy'));

// The store's keys expire (lease, retention): a Redis that evicts when full may drop processed
// ids first of all, so the module says so at start, once, as BullMQ does for its queues.
describe('the Redis store warns about an evicting maxmemory-policy', () => {
  const servers: TestRedisServer[] = [];
  let w: WebhookApp | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
    for (const server of servers.splice(0)) await server.stop();
  });

  it('volatile-lru: one warning naming the policy and what it risks, however many deliveries and accounts', async () => {
    const redis = await startRedisServer({ maxmemoryPolicy: 'volatile-lru' });
    servers.push(redis);
    const logger = new CollectingLogger();
    // a second account on the same Redis shares the connection: still one line
    const eu = PaymentModule.forRoot({ account: 'eu', baseUrl: 'http://127.0.0.1:9', webhookSecret: WEBHOOK_SECRET, redisUrl: redis.url });
    w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: redis.url }, extraImports: [eu] });
    expect((await postWebhook(w.url, envelope(), { path: 'payments/eu/webhook' })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await postWebhook(w.url, envelope())).status).toBe(200);
    await waitFor('the eviction warning', () => evictionWarnings(logger).length > 0);
    expect(evictionWarnings(logger).map((l) => [l.level, l.message])).toEqual([
      [
        'warn',
        'Redis maxmemory-policy is volatile-lru: once Redis is full it may evict processed webhook ids (they have a TTL), ' +
          "and a late copy of such an event would run its handlers again. Use noeviction on the store's Redis",
      ],
    ]);
  });

  it('noeviction (Redis\' default): no warning', async () => {
    const redis = await startRedisServer();
    servers.push(redis);
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: redis.url } });
    expect((await postWebhook(w.url, envelope())).status).toBe(200);
    // the check went out when the connection opened, before the delivery's commands, and
    // Redis answers in order: had it warned, the line would be there by now
    expect(evictionWarnings(logger)).toEqual([]);
  });

  it('a Redis outage is logged once (and its end once), however many accounts share the connection', async () => {
    const redis = await startRedisServer();
    servers.push(redis);
    const logger = new CollectingLogger();
    const eu = PaymentModule.forRoot({ account: 'eu', baseUrl: 'http://127.0.0.1:9', webhookSecret: WEBHOOK_SECRET, redisUrl: redis.url });
    w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: redis.url }, extraImports: [eu] });
    expect((await postWebhook(w.url, envelope())).status).toBe(200);
    const where = `(${redis.url.replace(/\/$/, '')})`;
    const storeLines = () =>
      logger.lines.filter((l) => l.context === 'RedisWebhookEventStore').map((l) => [l.level, /^Redis (unavailable|connection restored)/.exec(l.message)?.[0]]);
    await redis.stop();
    await waitFor('the outage was logged', () => storeLines().length > 0);
    await redis.restart();
    await waitFor('the end of the outage was logged', () => storeLines().some(([level]) => level === 'log'));
    expect((await postWebhook(w.url, envelope(), { path: 'payments/eu/webhook' })).status).toBe(200);
    // which Redis, redacted: an operator with several URLs knows whose is down
    expect(logger.lines.filter((l) => l.context === 'RedisWebhookEventStore').map((l) => [l.level, l.message.includes(where)])).toEqual([
      ['warn', true],
      ['log', true],
    ]);
    expect(storeLines()).toEqual([
      ['warn', 'Redis unavailable'],
      ['log', 'Redis connection restored'],
    ]);
  });
});
