// Accounts and apps sharing one real redis-server: keys are namespaced by prefix and
// account, and accounts of one app on the same Redis use one connection.
import 'reflect-metadata';
import { Redis } from 'ioredis';
import { PaymentRedisConnections } from '../../lib/stores/redis-connections.service.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET, type WebhookApp } from '../support/webhooks-app.js';

describe('accounts and apps on one Redis', () => {
  let redis: TestRedisServer;
  const apps: WebhookApp[] = [];
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('two app instances with different key prefixes never deduplicate each other; the same prefix does', async () => {
    const shop = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, redisKeyPrefix: 'shop:' } });
    const billing = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, redisKeyPrefix: 'billing:' } });
    const shopTwin = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, redisKeyPrefix: 'shop:' } });
    apps.push(shop, billing, shopTwin);
    const body = envelope('payment.succeeded');
    const id = body.eventId as string;
    expect(await postWebhook(shop.url, body)).toMatchObject({ status: 200, json: { received: true } });
    expect(await postWebhook(billing.url, body)).toMatchObject({ status: 200, json: { received: true } });
    expect(await postWebhook(shopTwin.url, body)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect([shop, billing, shopTwin].map((app) => app.handlers.count('payment.*', id))).toEqual([1, 1, 0]);

    const raw = new Redis(redis.url);
    try {
      const keys = (await raw.keys('*')).filter((key) => key.endsWith(id)).sort();
      expect(keys).toEqual([`billing:default:event:${id}`, `shop:default:event:${id}`]);
    } finally {
      raw.disconnect();
    }
  });

  it("sandbox and live apps on one Redis keep apart by the default prefix, which includes the environment", async () => {
    const sandbox = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url } });
    const live = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, environment: 'live' } });
    apps.push(sandbox, live);
    const id = `evt_env_${Date.now()}`;
    expect(await postWebhook(sandbox.url, envelope('payment.succeeded', { eventId: id }))).toMatchObject({ json: { received: true } });
    expect(await postWebhook(live.url, envelope('payment.succeeded', { eventId: id, environment: 'production' }))).toMatchObject({
      json: { received: true },
    });
    expect(sandbox.handlers.count('payment.*', id) + live.handlers.count('payment.*', id)).toBe(2);
  });

  it('serves every account of an app on the same Redis with one connection, keys namespaced by account', async () => {
    const app = await startWebhookApp({
      adapter: 'express',
      payment: { redisUrl: redis.url, redisKeyPrefix: 'multi:' },
      extraImports: [
        (await import('../../lib/payment.module.js')).PaymentModule.forRoot({
          account: 'eu',
          baseUrl: 'http://127.0.0.1:9',
          webhookSecret: 'whsec_eu',
          redisUrl: redis.url,
          redisKeyPrefix: 'multi:',
        }),
      ],
    });
    apps.push(app);
    expect(app.app.get(PaymentRedisConnections).size).toBe(1);
    const body = envelope('payment.succeeded');
    const id = body.eventId as string;
    expect(await postWebhook(app.url, body, { secret: WEBHOOK_SECRET })).toMatchObject({ json: { received: true } });
    expect(await postWebhook(app.url, body, { secret: 'whsec_eu', path: 'payments/eu/webhook' })).toMatchObject({
      json: { received: true },
    });
    expect(app.handlers.count('payment.*', id)).toBe(2);
    const raw = new Redis(redis.url);
    try {
      expect((await raw.keys(`multi:*${id}`)).sort()).toEqual([`multi:default:event:${id}`, `multi:eu:event:${id}`]);
      // as redis-server sees it: the app's one connection, besides this one
      const ownId = await raw.client('ID');
      const others = String(await raw.client('LIST')).trim().split('\n').filter((line) => !line.startsWith(`id=${ownId} `));
      expect(others).toHaveLength(1);
    } finally {
      raw.disconnect();
    }
  });

  it('gives accounts that asked for different redisTimeoutMs connections of their own', async () => {
    const { PaymentModule } = await import('../../lib/payment.module.js');
    const account = (name: string, redisTimeoutMs: number) =>
      PaymentModule.forRoot({ account: name, baseUrl: 'http://127.0.0.1:9', webhookSecret: `whsec_${name}`, redisUrl: redis.url, redisTimeoutMs });
    const app = await startWebhookApp({
      adapter: 'express',
      payment: { redisUrl: redis.url, redisTimeoutMs: 2000 },
      extraImports: [account('eu', 2000), account('us', 10_000)],
    });
    apps.push(app);
    // default and eu share one; us has its own
    expect(app.app.get(PaymentRedisConnections).size).toBe(2);
    for (const [path, secret] of [['payments/webhook', WEBHOOK_SECRET], ['payments/eu/webhook', 'whsec_eu'], ['payments/us/webhook', 'whsec_us']]) {
      expect(await postWebhook(app.url, envelope('payment.succeeded'), { path, secret })).toMatchObject({ status: 200, json: { received: true } });
    }
  });
});
