import 'reflect-metadata';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';
import { CollectingLogger } from '../support/collecting-logger.js';

// A web-only instance (queueWorker: false) and a separate worker instance share one Redis
// that keeps an append-only file, as an operator would run it.
describe('queue mode: web-only instance, separate worker, Redis outage', () => {
  let redis: TestRedisServer;
  let web: QueueApp;
  let worker: QueueApp | undefined;

  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    web = await startQueueApp(redis.url, { payment: { queueWorker: false } });
  });
  afterAll(async () => {
    await worker?.close();
    await web?.close();
    await redis?.stop();
  });

  const doneOnce = (app: QueueApp, ids: string[]) => ids.every((id) => app.handlers.count('done', id) === 1);

  it('acknowledges without a worker, answers 503 while Redis is down, and loses nothing across the restart', async () => {
    const queued = Array.from({ length: 10 }, () => envelope('payment.succeeded'));
    for (const e of queued) expect(await postWebhook(web.url, e)).toMatchObject({ status: 200, json: { received: true, queued: true } });
    await sleep(200);
    // web-only: nothing ran here
    expect(queued.filter((e) => web.handlers.count('entered', e.eventId as string) > 0)).toEqual([]);

    await redis.stop();
    const refused = Array.from({ length: 5 }, () => envelope('payment.succeeded'));
    for (const e of refused) {
      const r = await postWebhook(web.url, e);
      expect(r.status).toBe(503);
      expect(r.json).toEqual({ statusCode: 503, code: 'WEBHOOK_QUEUE_UNAVAILABLE', message: expect.any(String) });
    }

    await redis.restart();
    // the service retries what was refused; the web instance reconnects by itself
    for (const e of refused) {
      await waitFor(`${e.eventId as string} is accepted`, async () => (await postWebhook(web.url, e)).status === 200);
    }
    worker = await startQueueApp(redis.url);
    const all = [...queued, ...refused].map((e) => e.eventId as string);
    await waitFor('the worker handled every event', () => doneOnce(worker!, all));
    await sleep(300);
    expect(all.map((id) => worker!.handlers.count('entered', id))).toEqual(all.map(() => 1));
    expect(all.filter((id) => web.handlers.count('entered', id) > 0)).toEqual([]);
  });

  it('a running worker resumes after Redis restarts', async () => {
    // the worker of the first test, or its own when that one failed before starting it
    worker ??= await startQueueApp(redis.url);
    const before = envelope('payment.succeeded');
    expect(await postWebhook(web.url, before)).toMatchObject({ status: 200 });
    await waitFor('handled before the outage', () => worker!.handlers.count('done', before.eventId as string) === 1);

    await redis.stop();
    await sleep(500);
    await redis.restart();
    const after = Array.from({ length: 5 }, () => envelope('payment.succeeded'));
    for (const e of after) {
      await waitFor(`${e.eventId as string} is accepted`, async () => (await postWebhook(web.url, e)).status === 200);
    }
    const ids = after.map((e) => e.eventId as string);
    await waitFor('the worker handled the events queued after the restart', () => doneOnce(worker!, ids), 20_000);
    // copies of handled events are still recognised after the restart (the store was persisted)
    expect(await postWebhook(web.url, before)).toMatchObject({ status: 200, json: { duplicate: true } });
  });
});

describe('queue mode: a Redis outage while a handler finishes', () => {
  let redis: TestRedisServer;

  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('a handler that finishes while Redis is down runs once: its completion is recorded when Redis is back', async () => {
    // Outage longer than the job lock and the claim lease (1 s each here): the job's outcome is
    // lost too, so BullMQ's stalled-job check hands the event out again after the restart.
    // Completion used to be given up after three tries, and that second run ran the handlers again.
    const logs = new CollectingLogger();
    const own = await startQueueApp(redis.url, { logger: logs });
    try {
      const e = envelope('payment.succeeded');
      const id = e.eventId as string;
      const release = own.handlers.hold(id);
      expect(await postWebhook(own.url, e)).toMatchObject({ status: 200, json: { queued: true } });
      await waitFor('the handler started', () => own.handlers.count('entered', id) === 1);
      await redis.stop();
      release(); // the handler's effect happens during the outage
      await waitFor('the handler finished', () => own.handlers.count('done', id) === 1);
      await sleep(3000);
      await redis.restart();
      await sleep(7000); // several stalled-job checks and lease lengths
      expect([own.handlers.count('entered', id), own.handlers.count('done', id)]).toEqual([1, 1]);
      expect(logs.messages('error').some((m) => m.includes('could not be recorded yet') && m.includes('retrying'))).toBe(true);
      expect(logs.messages('log').some((m) => m.includes(id) && m.includes('recorded after'))).toBe(true);
      expect(await postWebhook(own.url, e)).toMatchObject({ status: 200, json: { duplicate: true } });
    } finally {
      await own.close();
    }
  });
});

describe('queue mode: dead letters while Redis cannot be reached', () => {
  let redis: TestRedisServer;
  let app: QueueApp | undefined;

  beforeAll(async () => {
    redis = await startRedisServer({ requirePass: 'dl-S3cret-pass' });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    await redis?.stop();
  });

  /** How `fn` settles, and how long it took. */
  async function settled(fn: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
    const started = Date.now();
    const error = await fn().then(
      () => undefined,
      (e: unknown) => e,
    );
    return { error, ms: Date.now() - started };
  }

  it.each([
    ['a refused password', () => redis.url.replace('redis://', 'redis://:wrong-pass@'), /WRONGPASS|NOAUTH|invalid/i],
    ['Redis down since boot', () => 'redis://127.0.0.1:1', /not connected|ECONNREFUSED/i],
  ])('with %s, list(), get(), replay() and discard() reject with PaymentQueueUnavailableError within redisTimeoutMs, no password in it', async (_label, url, reason) => {
    app = await startQueueApp(url(), { payment: { redisTimeoutMs: 500, queueWorker: false } });
    const d = app.deadLetters;
    for (const read of [() => d.list(), () => d.get('evt_1'), () => d.replay('evt_1'), () => d.discard('evt_1')]) {
      const { error, ms } = await settled(read);
      expect(error).toMatchObject({ name: 'PaymentQueueUnavailableError', code: 'QUEUE_UNAVAILABLE', account: 'default' });
      expect((error as Error).message).toMatch(reason);
      expect((error as Error).message).not.toContain('pass@');
      expect((error as Error).message).not.toContain('wrong-pass');
      expect(ms).toBeLessThan(5_000);
    }
  });
});
