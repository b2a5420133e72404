import 'reflect-metadata';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildApp, startChildApp } from '../support/child-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

/** Starts test/queue/fixtures/queue-worker-process.ts in its own Node process. */
function startWorkerProcess(redisUrl: string, effectsFile: string): Promise<ChildApp> {
  return startChildApp('test/queue/fixtures/queue-worker-process.ts', {
    EFFECTS_FILE: effectsFile,
    PAYMENT_BASE_URL: 'http://127.0.0.1:9',
    PAYMENT_PROCESSING: 'queue',
    PAYMENT_QUEUE_REDIS_URL: redisUrl,
    PAYMENT_QUEUE_BACKOFF_MS: '50',
    PAYMENT_QUEUE_LOCK_DURATION_MS: '1000',
    PAYMENT_WEBHOOK_LEASE_MS: '1000',
  }, 60_000);
}

// The worker runs in its own Node process (so it can be SIGKILLed mid-handler); the web-only
// instance and the worker that takes over run in this process.
describe('queue mode across processes: a web-only instance and a worker process', () => {
  let redis: TestRedisServer;
  let dir: string;
  let effectsFile: string;
  let web: QueueApp;
  let workerProcess: ChildApp | undefined;
  let takeover: QueueApp | undefined;

  const lines = () => readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean);
  const runs = (kind: 'entered' | 'done', eventId: string) =>
    lines()
      .filter((l) => l.startsWith(`${kind} ${eventId} `))
      .map((l) => Number(l.split(' ')[2]));

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'pg-queue-'));
    effectsFile = join(dir, 'effects.log');
    writeFileSync(effectsFile, '');
    // each assigned as soon as it is up, so afterAll stops it even if the other failed
    await Promise.all([
      startQueueApp(redis.url, { payment: { queueWorker: false } }).then((app) => (web = app)),
      startWorkerProcess(redis.url, effectsFile).then((child) => (workerProcess = child)),
    ]);
  }, 90_000);
  afterAll(async () => {
    await workerProcess?.kill();
    await takeover?.close();
    await web?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the web-only instance acknowledges; the worker process handles every event once', async () => {
    const events = Array.from({ length: 20 }, () => envelope('payment.succeeded'));
    for (const e of events) expect(await postWebhook(web.url, e)).toMatchObject({ status: 200, json: { queued: true } });
    const ids = events.map((e) => e.eventId as string);
    await waitFor('every event was handled', () => ids.every((id) => runs('done', id).length === 1));
    expect(ids.flatMap((id) => runs('entered', id))).toEqual(ids.map(() => workerProcess!.proc.pid));
    expect(ids.filter((id) => web.handlers.count('entered', id) > 0)).toEqual([]);
  });

  it('a worker killed with SIGKILL mid-handler: another worker completes the event, once', async () => {
    const event = envelope('payment.succeeded');
    (event.data as Record<string, unknown>).custom = 'block';
    const id = event.eventId as string;
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the worker process started the blocking handler', () => runs('entered', id).length === 1);
    await workerProcess!.kill();
    expect(runs('done', id)).toEqual([]);

    // its lock and its claim in the store lapse (about 1 s each here); the stalled-job check hands the job over
    takeover = await startQueueApp(redis.url);
    await waitFor('the other worker completed the event', () => takeover!.handlers.count('done', id) === 1, 20_000);
    await sleep(500);
    expect(takeover.handlers.count('entered', id)).toBe(1);
    expect(runs('done', id)).toEqual([]);
    expect(await takeover.deadLetters.get(id)).toBeUndefined();
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
  });
});
