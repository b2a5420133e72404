import 'reflect-metadata';
import Redis from 'ioredis';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { paymentEventJobId } from '../../lib/queue/payment-event-job.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { markProcessed, type QueueApp, sleep, startQueueApp } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// A copy of an event the store marks processed, on a web-only instance whose store shares the
// queue's connection (the default): its processed check is part of the job-state read. It must
// queue no job (one would run the handlers again once the mark lapses), and be answered from the
// read alone (a Redis out of memory still answers reads).
describe('queue mode: a copy of a processed event', () => {
  let redis: TestRedisServer;
  let web: QueueApp;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
    web = await startQueueApp(redis.url, { payment: { queueWorker: false } });
    await postWebhook(web.url, envelope('payment.succeeded')); // BullMQ loads its scripts
  });
  afterAll(async () => {
    await web?.close();
    admin?.disconnect();
    await redis?.stop();
  });

  const jobOf = (eventId: string) => web.app.get(PaymentAccountRegistry).requireQueue('default').queue.getJob(paymentEventJobId('default', eventId));

  it('is answered duplicate and leaves no job, so a worker started after the mark lapsed runs nothing', async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    await markProcessed(web.app, id, 1500);
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(await jobOf(id)).toBeUndefined();
    await sleep(1700); // the mark's retention is over
    const worker = await startQueueApp(redis.url, {});
    try {
      await sleep(1000);
      expect(worker.handlers.count('entered', id)).toBe(0);
    } finally {
      await worker.close();
    }
  });

  it('is answered duplicate while Redis is out of memory and refuses the add (noeviction)', async () => {
    const event = envelope('payment.succeeded');
    await markProcessed(web.app, event.eventId as string, 600_000);
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', String(used + 1024));
    try {
      // past the limit: every write is refused from here on
      for (let i = 0; i < 100; i++) await admin.set(`filler:${i}`, 'x'.repeat(1000)).catch(() => undefined);
      await expect(admin.set('probe', 'x')).rejects.toThrow(/OOM/);
      expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
      // a new event cannot be queued then: 503, nothing acknowledged
      expect(await postWebhook(web.url, envelope('payment.succeeded'))).toMatchObject({ status: 503, json: { code: 'WEBHOOK_QUEUE_UNAVAILABLE' } });
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
  });
});
