import 'reflect-metadata';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// The event store on a Redis of its own goes down after the handlers finished and before their
// completion was recorded, for longer than queueJobTimeoutMs. The attempt must wait for the
// completion (retried until the store answers) rather than time out: its retry would claim the
// event once the store is back and run the handlers a second time.
describe('queue mode: completion retried through an outage of the store alone', () => {
  let queueRedis: TestRedisServer;
  let storeRedis: TestRedisServer;
  const apps: QueueApp[] = [];

  beforeAll(async () => {
    queueRedis = await startRedisServer();
    storeRedis = await startRedisServer({ appendOnly: true });
    const payment = { redisUrl: storeRedis.url, queueJobTimeoutMs: 1000, queueAttempts: 12, queueBackoffMs: 250, queueConcurrency: 20 };
    for (let i = 0; i < 2; i++) apps.push(await startQueueApp(queueRedis.url, { payment }));
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await queueRedis?.stop();
    await storeRedis?.stop();
  });

  it('runs each event once although the outage outlasts queueJobTimeoutMs', async () => {
    const events = Array.from({ length: 10 }, () => envelope('payment.succeeded'));
    const ids = events.map((e) => e.eventId as string);
    const releases = ids.flatMap((id) => apps.map((app) => app.handlers.hold(id)));
    for (const e of events) expect(await postWebhook(apps[0]!.url, e)).toMatchObject({ status: 200, json: { queued: true } });
    const count = (kind: 'entered' | 'done', id: string) => apps.reduce((n, app) => n + app.handlers.count(kind, id), 0);
    await waitFor('every handler is running', () => ids.every((id) => count('entered', id) === 1));
    await storeRedis.stop();
    for (const release of releases) release();
    await waitFor('every handler finished', () => ids.every((id) => count('done', id) === 1));
    await sleep(4000); // four job time-outs with the store down
    await storeRedis.restart();
    await sleep(8000); // any retry queued meanwhile has had its chance to run
    expect(ids.map((id) => count('entered', id))).toEqual(ids.map(() => 1));
    expect(await apps[0]!.deadLetters.list()).toEqual([]);
  }, 40_000);

  it('at shutdown, a completion still waiting for the store gives up and its job is recorded completed: no other worker runs it again', async () => {
    const payment = { redisUrl: storeRedis.url, redisKeyPrefix: 'shutdown-outage:', queueShutdownTimeoutMs: 1000, queueConcurrency: 20 };
    const logger = new CollectingLogger();
    const closing = await startQueueApp(queueRedis.url, { payment, logger });
    const events = Array.from({ length: 8 }, () => envelope('payment.succeeded'));
    const ids = events.map((e) => e.eventId as string);
    const releases = ids.map((id) => closing.handlers.hold(id));
    for (const e of events) expect(await postWebhook(closing.url, e)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('every handler is running', () => ids.every((id) => closing.handlers.count('entered', id) === 1));
    await storeRedis.stop();
    for (const release of releases) release();
    await waitFor('every handler finished', () => ids.every((id) => closing.handlers.count('done', id) === 1));
    await closing.close();
    // the handlers are done: the shutdown line says so rather than "still running"
    const shutdownLines = logger.lines.filter((l) => l.level === 'warn' && l.message.includes('of shutdown')).map((l) => l.message);
    expect(shutdownLines).toEqual([expect.stringMatching(/^Worker of account default after 1000 ms of shutdown: 8 job\(s\) whose handlers finished could not record/)]);
    await storeRedis.restart();
    const next = await startQueueApp(queueRedis.url, { payment: { ...payment, queueLockDurationMs: 1000 } });
    apps.push(next);
    await sleep(4000); // a job left active would be taken over by the stalled-job check by now
    expect(ids.map((id) => next.handlers.count('entered', id))).toEqual(ids.map(() => 0));
  }, 40_000);

  it('a store whose complete() never answers is a failed attempt at recording, said at error, not a silent hold of the worker slot', async () => {
    const logger = new CollectingLogger();
    class HangingCompleteStore extends MemoryWebhookEventStore {
      override complete(): Promise<void> {
        return new Promise(() => undefined);
      }
    }
    const app = await startQueueApp(queueRedis.url, {
      logger,
      payment: { store: new HangingCompleteStore(), redisKeyPrefix: 'hanging-store:', redisTimeoutMs: 300, queueJobTimeoutMs: 1000 },
    });
    apps.push(app);
    const event = envelope('payment.succeeded');
    expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the handler ran', () => app.handlers.count('done', event.eventId as string) === 1);
    await waitFor(
      'the completion failure was said',
      () => logger.lines.some((l) => l.level === 'error' && l.message.includes('completion could not be recorded yet') && l.message.includes('did not answer within 1000 ms')),
      10_000,
    );
  }, 30_000);
});

describe('queue mode: an event met by an outage of the store alone waits for it, attempts untouched', () => {
  let queueRedis: TestRedisServer;
  let storeRedis: TestRedisServer;
  let app: QueueApp;
  const logger = new CollectingLogger();

  beforeAll(async () => {
    queueRedis = await startRedisServer();
    storeRedis = await startRedisServer();
    // three attempts 50 ms apart: were a failed claim an attempt, the event would be a dead letter within a second
    app = await startQueueApp(queueRedis.url, { logger, payment: { redisUrl: storeRedis.url, redisTimeoutMs: 300 } });
  });
  afterAll(async () => {
    await app?.close();
    await queueRedis?.stop();
    await storeRedis?.stop();
  });

  it('is acknowledged (the job is in the queue), waits while the store is down, and runs once when it is back', async () => {
    await storeRedis.stop();
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await sleep(3000); // many claims tried meanwhile
    expect(app.handlers.count('entered', id)).toBe(0);
    expect(await app.deadLetters.list()).toEqual([]);
    // said, once per 30 s, not once per job or per try
    const said = logger.messages('warn').filter((m) => m.includes('the webhook event store failed a claim (unreachable, or a fault of the store itself)'));
    expect(said).toHaveLength(1);
    await storeRedis.restart();
    await waitFor('the event ran once the store was back', () => app.handlers.count('done', id) === 1, 15_000);
    await sleep(500);
    expect(app.handlers.count('entered', id)).toBe(1);
    expect(await app.deadLetters.list()).toEqual([]);
  }, 40_000);
});

describe('queue mode: a claim the store does not answer within queueJobTimeoutMs', () => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('uses no attempt and runs nothing, even when the claim comes late: the job waits and runs once when the store is quick again', async () => {
    let slow = true;
    class SlowClaimStore extends MemoryWebhookEventStore {
      override async claim(key: string, leaseMs: number) {
        // each claim is answered, but after the attempt's time-out
        if (slow) await sleep(1_300);
        return super.claim(key, leaseMs);
      }
    }
    const logger = new CollectingLogger();
    // three attempts 50 ms apart: were each late claim an attempt, a dead letter within about four seconds
    const app = await startQueueApp(redis.url, { logger, payment: { store: new SlowClaimStore(), queueJobTimeoutMs: 1000 } });
    try {
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { queued: true } });
      await sleep(5_000);
      // a claim answered after its attempt was given up runs nothing (its key is released for the retry)
      expect(app.handlers.count('entered', id)).toBe(0);
      expect(await app.deadLetters.list()).toEqual([]);
      expect(logger.messages('warn')).toContainEqual(expect.stringContaining('the store did not answer the claim within queueJobTimeoutMs (1000 ms)'));
      slow = false;
      await waitFor('the event ran once the store was quick again', () => app.handlers.count('done', id) === 1, 15_000);
      await sleep(1_500);
      expect(app.handlers.count('entered', id)).toBe(1);
      expect(await app.deadLetters.list()).toEqual([]);
    } finally {
      await app.close();
    }
  }, 40_000);
});
