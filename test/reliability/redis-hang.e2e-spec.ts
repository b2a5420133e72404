import 'reflect-metadata';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { PaymentHealthIndicator } from '../../lib/health/payment-health.indicator.js';
import { sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook, startWebhookApp } from '../support/webhooks-app.js';

// A Redis that hangs (frozen with SIGSTOP: its connections stay open and take commands, nothing
// is answered), unlike the stopped servers of the outage tests: a command that timed out on our
// side still runs when the server wakes, and the module must be right about that too.
describe('reliability: a Redis that stops answering, then wakes', () => {
  let redis: TestRedisServer;
  let close: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    redis = await startRedisServer();
  });
  afterEach(async () => {
    redis.resume();
    await close?.();
    close = undefined;
    await redis.stop();
  });

  /** A queue-mode app (Redis time-out 500 ms) whose worker has handled one event: connected and running. */
  async function startRunningQueueApp(queueRedisUrl: string, payment: PaymentModuleOptions) {
    const q = await startQueueApp(queueRedisUrl, { payment: { redisTimeoutMs: 500, ...payment } });
    close = () => q.close();
    const warmup = envelope();
    expect((await postWebhook(q.url, warmup)).status).toBe(200);
    await waitFor('the worker is running', () => q.handlers.count('done', warmup.eventId as string) === 1);
    return q;
  }

  it('inline: 503 and health down while it hangs; once awake, the retry is handled at once (the claim sent into the silence is taken back)', async () => {
    const w = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, redisTimeoutMs: 500 } });
    close = () => w.close();
    const health = () => w.app.get(PaymentHealthIndicator).isHealthy('payments');
    expect((await postWebhook(w.url, envelope())).status).toBe(200); // connected

    redis.pause();
    const event = envelope();
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 503, json: { code: 'WEBHOOK_STORE_UNAVAILABLE' } });
    expect((await health()).payments.status).toBe('down');

    redis.resume();
    await waitFor('the store answers again', async () => (await health()).payments.status === 'up');
    // without the release the claim would hold the event for its whole lease (60 s): 409 until then
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200, json: { received: true } });
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(w.handlers.count('payment.*', event.eventId as string)).toBe(1);
  });

  it('queue mode: 503 while it hangs; whatever the delivery sent into the silence, the service\'s retry runs the event once', async () => {
    const q = await startRunningQueueApp(redis.url, {});

    redis.pause();
    const event = envelope();
    const id = event.eventId as string;
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 503, json: { code: 'WEBHOOK_QUEUE_UNAVAILABLE' } });
    redis.resume();
    // the job's state is read before it is added: whether the add followed once Redis woke depends
    // on which time-out fired first (the command's own or the delivery's); either way the event
    // runs once, and the service's retry (after a 503) is queued or a duplicate
    await sleep(500);
    const retry = await postWebhook(q.url, event);
    expect(retry.status).toBe(200);
    expect([{ received: true, queued: true }, { received: true, duplicate: true }]).toContainEqual(retry.json);
    await waitFor('the retried event ran', () => q.handlers.count('done', id) === 1);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    await sleep(300);
    expect(q.handlers.count('entered', id)).toBe(1);
  });

  it("queue mode: while the store's Redis hangs and the queue's answers, deliveries are still queued; each runs once when the store wakes", async () => {
    const queueRedis = await startRedisServer();
    try {
      // the store on the hanging server (`redis`), the queue on another
      const q = await startRunningQueueApp(queueRedis.url, { redisUrl: redis.url });

      redis.pause();
      const event = envelope();
      // the processed-check gives up after half the budget and leaves the rest to the queue: before,
      // it used the whole budget and every delivery was a 503 blaming the queue
      expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } });
      expect(q.handlers.count('entered', event.eventId as string)).toBe(0); // the worker cannot claim it yet

      redis.resume();
      await waitFor('the queued event ran once the store woke', () => q.handlers.count('done', event.eventId as string) === 1);
      expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
      expect(q.handlers.count('entered', event.eventId as string)).toBe(1);
    } finally {
      await close?.();
      close = undefined;
      await queueRedis.stop();
    }
  });
});
