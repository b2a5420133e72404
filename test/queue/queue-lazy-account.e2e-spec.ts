import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { LazyModuleLoader } from '@nestjs/core';
import { Redis } from 'ioredis';
import { PaymentModule } from '../../lib/payment.module.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { FAST_QUEUE_OPTIONS } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { ADAPTERS, envelope, PerAccountWebhookController, postWebhook, startWebhookApp } from '../support/webhooks-app.js';

// LazyModuleLoader runs no lifecycle hook of the modules it loads: a queue-mode account loaded
// that way (the README's way: webhookRoute: false, a host route with PaymentWebhookReceiver)
// must still start its worker, or every event is acknowledged and never run.
describe.each(ADAPTERS)('a lazily loaded queue-mode account (%s)', (adapter) => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('runs the events its host route queued, and its worker and connections stop with the app', async () => {
    const secret = 'whsec_lazy_queue_eu';
    @Module({
      imports: [
        PaymentModule.forRoot({
          ...FAST_QUEUE_OPTIONS,
          account: 'eu',
          baseUrl: 'http://127.0.0.1:9',
          webhookSecret: secret,
          webhookRoute: false,
          queueRedisUrl: redis.url,
          redisKeyPrefix: `lazy-${adapter}:`,
        }),
      ],
    })
    class LazyEuPaymentsModule {}
    const logger = new CollectingLogger();
    const app = await startWebhookApp({ adapter, logger, payment: { webhookRoute: false }, controllers: [PerAccountWebhookController] });
    let closed = false;
    try {
      await app.app.get(LazyModuleLoader).load(() => LazyEuPaymentsModule);
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      const answer = await postWebhook(app.url, event, { path: 'hooks/eu', secret });
      expect(answer).toMatchObject({ status: 200, json: { received: true, queued: true } });
      await waitFor('the queued event ran', () => app.handlers.count('payment.*', id) === 1, 10_000);
      await app.close();
      closed = true;
      expect(logger.lines.some((line) => line.message.startsWith('Worker of account eu stopped taking jobs'))).toBe(true);
      // close() reached the late account's queue and store too: no connection of the app is left open
      const probe = new Redis(redis.url);
      try {
        const clients = (await probe.client('LIST')) as string;
        expect(clients.trim().split('\n')).toHaveLength(1);
      } finally {
        probe.disconnect();
      }
    } finally {
      if (!closed) await app.close();
    }
  }, 30_000);
});

// Inline, with a Redis store: the late account's parts stop in order, so a delivery still running
// when close() begins records its completion before the store closes (a copy later is a duplicate).
describe('a lazily loaded inline account with a Redis store', () => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('a delivery running when close() begins is recorded processed before the store closes', async () => {
    const secret = 'whsec_lazy_inline_eu';
    @Module({
      imports: [
        PaymentModule.forRoot({ account: 'eu', baseUrl: 'http://127.0.0.1:9', webhookSecret: secret, webhookRoute: false, redisUrl: redis.url, redisKeyPrefix: 'lazy-inline:' }),
      ],
    })
    class LazyEuPaymentsModule {}
    const app = await startWebhookApp({ adapter: 'express', payment: { webhookRoute: false }, controllers: [PerAccountWebhookController] });
    await app.app.get(LazyModuleLoader).load(() => LazyEuPaymentsModule);
    const event = envelope('payment.succeeded');
    let release!: () => void;
    app.handlers.gate = new Promise<void>((resolve) => (release = resolve));
    const answer = postWebhook(app.url, event, { path: 'hooks/eu', secret });
    await waitFor('the handler started', () => app.handlers.entered === 1);
    const closing = app.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect((await answer).status).toBe(200);
    await closing;
    const probe = new Redis(redis.url);
    try {
      expect(await probe.get(`lazy-inline:eu:event:${event.eventId}`)).toBe('processed');
    } finally {
      probe.disconnect();
    }
  }, 30_000);
});
