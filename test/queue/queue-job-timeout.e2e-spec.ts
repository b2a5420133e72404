import 'reflect-metadata';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { FAST_QUEUE_OPTIONS, type QueueApp, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// BullMQ renews a running job's lock for as long as its process lives, so only the module's own
// bound (queueJobTimeoutMs) keeps a handler that never returns from holding its event for good.
describe('queue mode: a handler that never returns', () => {
  let redis: TestRedisServer;
  let q: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    // one slot: a hung handler that kept it would stop every other event
    q = await startQueueApp(redis.url, { payment: { ...FAST_QUEUE_OPTIONS, queueConcurrency: 1, queueJobTimeoutMs: 1000 } });
  });
  afterAll(async () => {
    await q?.close();
    await redis?.stop();
  });

  it('gives its attempt up after queueJobTimeoutMs: the slot serves other events, the event is retried and ends a dead letter', async () => {
    const hung = envelope('payment.succeeded');
    const hungId = hung.eventId as string;
    q.handlers.hang.add(hungId);
    expect(await postWebhook(q.url, hung)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the hung handler started', () => q.handlers.count('entered', hungId) === 1);

    const next = envelope('payment.succeeded');
    expect(await postWebhook(q.url, next)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the next event was handled in the freed slot', () => q.handlers.count('done', next.eventId as string) === 1, 10_000);

    // each retry waits for the given-up claim to lapse (no renewal past the time-out), then hangs again
    await waitFor('the hung event is a dead letter', async () => (await q.deadLetters.get(hungId)) !== undefined, 20_000);
    const letter = (await q.deadLetters.get(hungId))!;
    expect(letter.attempts).toBe(3);
    expect(letter.lastError).toContain('did not finish within queueJobTimeoutMs (1000 ms)');
    // never two runs at once: each attempt started only after the previous claim lapsed
    expect(q.handlers.count('entered', hungId)).toBe(3);
  });
});
