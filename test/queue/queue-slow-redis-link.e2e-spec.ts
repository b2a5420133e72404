import 'reflect-metadata';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { SlowRedisLink } from '../support/slow-redis-link.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// A copy whose read found no job, on a link slow enough that another copy's job fails every
// attempt (no backoff) before this copy's add lands: the add adds nothing, and the copy must not be
// acknowledged for an event that is by then a dead letter nobody replays.
describe('queue mode: a copy on a slow link to Redis, retries without backoff', () => {
  let redis: TestRedisServer;
  let link: SlowRedisLink;
  let slow: QueueApp;
  let fast: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    link = new SlowRedisLink(redis.port);
    await link.start();
    const payment = { queueAttempts: 2, queueBackoffMs: 0, redisTimeoutMs: 15_000 };
    slow = await startQueueApp(link.url, { payment: { ...payment, queueWorker: false } });
    fast = await startQueueApp(redis.url, { payment });
    // BullMQ loads its scripts on first use: not while the link is slow
    await postWebhook(slow.url, envelope('payment.succeeded'));
    await postWebhook(fast.url, envelope('payment.succeeded'));
  });
  afterAll(async () => {
    await slow?.close();
    await fast?.close();
    await link?.stop();
    await redis?.stop();
  });

  it('reads the job again after the add, and replays the dead letter it finds', async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    fast.handlers.failing.add(id);
    link.delayMs = 400;
    const viaSlow = postWebhook(slow.url, event);
    // while the slow copy's add is on its way, the fast copy queues the event and fails it twice
    await sleep(550);
    expect(await postWebhook(fast.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } });
    const answer = await viaSlow;
    link.delayMs = 0;
    expect(answer).toMatchObject({ status: 200, json: { received: true, queued: true } });
    // acknowledged: the dead letter it met was replayed, its handlers ran again
    await waitFor('the replay ran', () => fast.handlers.count('entered', id) > 2, 10_000);
  });

  it("the only delivery, read again, finds its own job: acknowledged as it is, not a 409 nor a replay", async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    fast.handlers.failing.add(id);
    link.delayMs = 400;
    // the worker fails both attempts while this delivery's add is answered and its second read travels
    const answer = await postWebhook(slow.url, event);
    link.delayMs = 0;
    expect(answer).toMatchObject({ status: 200, json: { received: true, queued: true } });
    await waitFor('the event is a dead letter', async () => (await fast.deadLetters.get(id)) !== undefined, 10_000);
    await sleep(300);
    expect(fast.handlers.count('entered', id)).toBe(2);
  });
});
