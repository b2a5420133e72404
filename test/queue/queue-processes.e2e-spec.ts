import 'reflect-metadata';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildApp, startChildApp } from '../support/child-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { Redis } from 'ioredis';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

/** Starts test/queue/fixtures/queue-worker-process.ts in its own Node process. */
function startWorkerProcess(redisUrl: string, effectsFile: string, env: Record<string, string> = {}): Promise<ChildApp> {
  return startChildApp('test/queue/fixtures/queue-worker-process.ts', {
    EFFECTS_FILE: effectsFile,
    PAYMENT_BASE_URL: 'http://127.0.0.1:9',
    PAYMENT_PROCESSING: 'queue',
    PAYMENT_QUEUE_REDIS_URL: redisUrl,
    PAYMENT_QUEUE_BACKOFF_MS: '50',
    PAYMENT_QUEUE_LOCK_DURATION_MS: '1000',
    PAYMENT_WEBHOOK_LEASE_MS: '1000',
    ...env,
  }, 60_000);
}

/** The effects file's runs of `eventId`: the pid of each `entered` or `done` line. */
function effectRuns(effectsFile: string, kind: 'entered' | 'done', eventId: string): number[] {
  return readFileSync(effectsFile, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`${kind} ${eventId} `))
    .map((l) => Number(l.split(' ')[2]));
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

  const runs = (kind: 'entered' | 'done', eventId: string) => effectRuns(effectsFile, kind, eventId);

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

// queueMaxStalledCount is the worker's to apply, once it holds the event's claim: BullMQ's own
// limit failed a job, unrun, at its next take, though its first run might still be alive.
describe('queue mode: a job found stalled more than queueMaxStalledCount times', () => {
  let redis: TestRedisServer;
  let dir: string;
  let effectsFile: string;
  let web: QueueApp | undefined;
  let frozen: ChildApp | undefined;
  let takeover: QueueApp | undefined;
  const runs = (kind: 'entered' | 'done', eventId: string) => effectRuns(effectsFile, kind, eventId);

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'pg-queue-stalls-'));
    effectsFile = join(dir, 'effects.log');
    writeFileSync(effectsFile, '');
  });
  afterEach(async () => {
    await frozen?.kill();
    await takeover?.close();
    await web?.close();
    frozen = takeover = web = undefined;
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a worker frozen past its lock (a long pause) that recovers finishes the event: handled once, no dead letter, no alert', async () => {
    const payment = { queueMaxStalledCount: 0, webhookLeaseMs: 30_000, redisKeyPrefix: 'frozen:' };
    web = await startQueueApp(redis.url, { payment: { ...payment, queueWorker: false } });
    frozen = await startWorkerProcess(redis.url, effectsFile, {
      SLOW_MS: '3000',
      PAYMENT_QUEUE_MAX_STALLED_COUNT: '0',
      PAYMENT_WEBHOOK_LEASE_MS: '30000',
      PAYMENT_REDIS_KEY_PREFIX: 'frozen:',
    });
    const event = envelope('payment.succeeded');
    (event.data as Record<string, unknown>).custom = 'slow';
    const id = event.eventId as string;
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the worker process started the slow handler', () => runs('entered', id).length === 1);
    frozen.proc.kill('SIGSTOP');
    takeover = await startQueueApp(redis.url, { payment, eventEmitter: true });
    await sleep(4000); // its lock (1 s) lapses; the other worker's stalled check finds the job
    frozen.proc.kill('SIGCONT');
    await waitFor('the recovered worker finished the handler', () => runs('done', id).length === 1, 20_000);
    await sleep(1500);
    expect(takeover.handlers.count('entered', id)).toBe(0);
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    // was a dead letter ("job stalled more than allowable limit") and an alert for an event handled
    // once: its replay, once the store forgot the event, ran it a second time
    expect(await takeover.deadLetters.get(id)).toBeUndefined();
    expect(takeover.listener!.received.filter((letter) => letter.eventId === id)).toEqual([]);
  }, 60_000);

  it('one whose event no run holds becomes a dead letter, unrun, saying why; a copy meanwhile is answered 409, not queued', async () => {
    const payment = { queueMaxStalledCount: 2, redisKeyPrefix: 'poison:' };
    web = await startQueueApp(redis.url, { payment: { ...payment, queueWorker: false } });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    const client = new Redis(redis.url);
    try {
      // as BullMQ leaves a job whose workers died running it three times (it kills them)
      await client.hset(`poison:_queue:default:${web.app.get(PaymentAccountRegistry).requireQueue('default').jobId(id)}`, 'stc', '3');
    } finally {
      client.disconnect();
    }
    // was 200 queued: the event would then be a dead letter the service believes delivered
    expect(await postWebhook(web.url, event)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    takeover = await startQueueApp(redis.url, { payment, eventEmitter: true });
    await waitFor('the event is a dead letter', () => takeover!.listener!.received.some((letter) => letter.eventId === id));
    expect(takeover.handlers.count('entered', id)).toBe(0);
    expect(await takeover.deadLetters.get(id)).toMatchObject({
      lastError: 'its workers stopped 3 times while running it (queueMaxStalledCount is 2): left a dead letter, not run again',
    });
    // replayed, it runs with its take-overs counted afresh
    expect(await takeover.deadLetters.replay(id)).toBe(true);
    await waitFor('the replayed event was handled', () => takeover!.handlers.count('done', id) === 1);
  });
});
