import 'reflect-metadata';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { FAST_QUEUE_OPTIONS, type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';

/** A store of the app's own whose release never answers (the module's Redis store bounds it; a custom one may not). */
class ReleaseHangingStore extends MemoryWebhookEventStore {
  override release(): Promise<void> {
    return new Promise<void>(() => undefined);
  }
}

// BullMQ renews a running job's lock for as long as its process lives, so only the module's own
// bound (queueJobTimeoutMs) keeps a handler that does not return from holding a worker slot.
describe('queue mode: a handler that does not return', () => {
  let redis: TestRedisServer;
  let q: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    // one slot: a stuck handler that kept it would stop every other event
    q = await startQueueApp(redis.url, { payment: { ...FAST_QUEUE_OPTIONS, queueConcurrency: 1, queueJobTimeoutMs: 1000 } });
  });
  afterAll(async () => {
    await q?.close();
    await redis?.stop();
  });

  it('frees its slot after queueJobTimeoutMs, keeps its event (no second run beside it), and completes it when it ends', async () => {
    const stuck = envelope('payment.succeeded');
    const stuckId = stuck.eventId as string;
    const release = q.handlers.hold(stuckId);
    expect(await postWebhook(q.url, stuck)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the stuck handler started', () => q.handlers.count('entered', stuckId) === 1);

    const next = envelope('payment.succeeded');
    expect(await postWebhook(q.url, next)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the next event was handled in the freed slot', () => q.handlers.count('done', next.eventId as string) === 1, 10_000);

    // the attempt was given up, yet its retry waits: the handler still runs and keeps the claim
    // (lease 1 s: it would have lapsed twice over without renewal)
    await sleep(2500);
    expect(q.handlers.count('entered', stuckId)).toBe(1);
    expect(await q.deadLetters.get(stuckId)).toBeUndefined();

    release();
    await waitFor('the stuck run completed', () => q.handlers.count('done', stuckId) === 1);
    await waitFor('the event is recorded as processed', async () => (await postWebhook(q.url, stuck)).json?.duplicate === true);
    await sleep(500);
    expect(q.handlers.count('entered', stuckId)).toBe(1);
    expect(await q.deadLetters.get(stuckId)).toBeUndefined();
  });

  it('an event waiting behind its own timed-out run is reported as an error every queueJobTimeoutMs, not silently kept', async () => {
    const logs = new CollectingLogger();
    const waiting = await startQueueApp(redis.url, {
      payment: { ...FAST_QUEUE_OPTIONS, redisKeyPrefix: 'waits-reported:', queueJobTimeoutMs: 1000 },
      logger: logs,
    });
    try {
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      const release = waiting.handlers.hold(id);
      expect(await postWebhook(waiting.url, event)).toMatchObject({ status: 200, json: { queued: true } });
      const reports = () => logs.messages('error').filter((m) => m.includes(id) && m.includes('has waited'));
      await waitFor('the wait was reported twice', () => reports().length >= 2, 15_000);
      expect(reports()[0]).toMatch(/has waited \d+ s more for its handlers that outlived queueJobTimeoutMs.*restart the worker process/);
      // still one run, no dead letter: reporting changes nothing
      expect(waiting.handlers.count('entered', id)).toBe(1);
      expect(await waiting.deadLetters.get(id)).toBeUndefined();
      release();
      await waitFor('the run completed', () => waiting.handlers.count('done', id) === 1);
      const reported = reports().length;
      await sleep(2000);
      expect(reports()).toHaveLength(reported);
    } finally {
      await waiting.close();
    }
  });

  it('a last attempt that timed out leaves a dead letter; when its run then succeeds, the dead letter goes (no replay runs it twice)', async () => {
    const late = await startQueueApp(redis.url, {
      payment: { ...FAST_QUEUE_OPTIONS, redisKeyPrefix: 'late-run:', queueAttempts: 1, queueJobTimeoutMs: 1000 },
    });
    try {
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      const release = late.handlers.hold(id);
      expect(await postWebhook(late.url, event)).toMatchObject({ status: 200, json: { queued: true } });
      await waitFor('the attempt timed out into a dead letter', async () => (await late.deadLetters.get(id)) !== undefined, 10_000);
      release();
      await waitFor('the run finished', () => late.handlers.count('done', id) === 1);
      await waitFor('its dead letter was removed', async () => (await late.deadLetters.get(id)) === undefined, 10_000);
      expect(await late.deadLetters.replay(id)).toBe(false);
      await sleep(300);
      expect(late.handlers.count('entered', id)).toBe(1);
    } finally {
      await late.close();
    }
  });

  it('a timed-out last attempt whose run succeeds during shutdown still has its dead letter removed before close() returns', async () => {
    const options = { ...FAST_QUEUE_OPTIONS, redisKeyPrefix: 'late-close:', queueAttempts: 1, queueJobTimeoutMs: 1000, queueShutdownTimeoutMs: 5000 };
    const first = await startQueueApp(redis.url, { payment: options });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const release = first.handlers.hold(id);
    expect(await postWebhook(first.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the attempt timed out into a dead letter', async () => (await first.deadLetters.get(id)) !== undefined, 10_000);
    const closing = first.close();
    setTimeout(release, 300);
    await closing;
    expect(first.handlers.count('done', id)).toBe(1);
    const second = await startQueueApp(redis.url, { payment: options });
    try {
      expect(await second.deadLetters.get(id)).toBeUndefined();
    } finally {
      await second.close();
    }
  });

  it('shutdown waits for a handler that outlived its attempt (within queueShutdownTimeoutMs): no second run elsewhere', async () => {
    const options = { ...FAST_QUEUE_OPTIONS, redisKeyPrefix: 'late-shutdown:', queueJobTimeoutMs: 1000, queueShutdownTimeoutMs: 5000 };
    const first = await startQueueApp(redis.url, { payment: options });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const release = first.handlers.hold(id);
    expect(await postWebhook(first.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the handler started', () => first.handlers.count('entered', id) === 1);
    await sleep(1500); // its attempt timed out; the handler still runs
    const startedClosing = Date.now();
    const closing = first.close();
    setTimeout(release, 500);
    await closing;
    expect(Date.now() - startedClosing).toBeGreaterThanOrEqual(450);
    expect(first.handlers.count('done', id)).toBe(1);

    const second = await startQueueApp(redis.url, { payment: options });
    try {
      await sleep(2500); // the retry comes due here: it finds the event processed
      expect(second.handlers.count('entered', id)).toBe(0);
      expect(await postWebhook(second.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    } finally {
      await second.close();
    }
  });

  it("a failed handler whose claim release hangs (a custom store) does not keep the slot: the release is given up, the attempt fails with the handler's error and the retry handles the event", async () => {
    const logger = new CollectingLogger();
    const hanging = await startQueueApp(redis.url, {
      logger,
      payment: { ...FAST_QUEUE_OPTIONS, store: new ReleaseHangingStore(), redisKeyPrefix: 'release-hangs:', queueConcurrency: 1, queueJobTimeoutMs: 60_000, redisTimeoutMs: 300 },
    });
    try {
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      hanging.handlers.failTimes.set(id, 1);
      expect(await postWebhook(hanging.url, event)).toMatchObject({ status: 200, json: { queued: true } });
      // the claim was never released: the retry waits for its lease (1 s) to lapse, then runs
      await waitFor('the retry handled the event', () => hanging.handlers.count('done', id) === 1, 10_000);
      expect(hanging.handlers.count('entered', id)).toBe(2);
      const next = envelope('payment.succeeded');
      expect(await postWebhook(hanging.url, next)).toMatchObject({ status: 200, json: { queued: true } });
      await waitFor('the one slot is free for the next event', () => hanging.handlers.count('done', next.eventId as string) === 1, 10_000);
      // the release was given up (bounded like a completion), so the attempt failed with the handler's own error
      expect(logger.messages('warn')).toContainEqual(expect.stringMatching(/^Attempt 1 of 3 of payment\.succeeded event .* failed; it will be retried: .*flaky downstream/));
      expect(logger.messages('warn')).toContainEqual(expect.stringMatching(/^Could not release the claim of webhook event .*the store did not answer within 1000 ms/));
    } finally {
      const closing = Date.now();
      await hanging.close();
      expect(Date.now() - closing).toBeLessThan(FAST_QUEUE_OPTIONS.queueShutdownTimeoutMs!);
    }
  });
});
