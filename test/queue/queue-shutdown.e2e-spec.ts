import 'reflect-metadata';
import { startChildApp } from '../support/child-app.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { FAST_QUEUE_OPTIONS, type QueueApp, type QueueAppOptions, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook, WEBHOOK_SECRET } from '../support/webhooks-app.js';
import { Queue } from 'bullmq';
import { paymentEventJobId } from '../../lib/queue/payment-event-job.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import type { WebhookClaimResult, WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';

/** A shared event store that, once `hanging`, never answers (a partitioned connection). */
class HangingStore implements WebhookEventStore {
  hanging = false;
  constructor(private readonly inner: MemoryWebhookEventStore) {}
  private gate<T>(call: () => Promise<T>): Promise<T> {
    return this.hanging ? new Promise<T>(() => undefined) : call();
  }
  claim(key: string, leaseMs: number): Promise<WebhookClaimResult> {
    return this.gate(() => this.inner.claim(key, leaseMs));
  }
  complete(key: string, claimToken: string, retentionMs: number): Promise<void> {
    return this.gate(() => this.inner.complete(key, claimToken, retentionMs));
  }
  release(key: string, claimToken: string): Promise<void> {
    return this.gate(() => this.inner.release(key, claimToken));
  }
  extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
    return this.gate(() => this.inner.extend(key, claimToken, leaseMs));
  }
  isProcessed(key: string): Promise<boolean> {
    return this.gate(() => this.inner.isProcessed(key));
  }
}

// app.close() stops taking jobs, lets running handlers finish up to queueShutdownTimeoutMs
// (1 s here) and leaves the unfinished ones to another worker.
describe('queue mode: graceful shutdown of a worker', () => {
  let redis: TestRedisServer;
  const running = new Set<QueueApp>();
  const start = async (logger?: CollectingLogger, opts: QueueAppOptions = {}) => {
    const app = await startQueueApp(redis.url, { logger, ...opts });
    running.add(app);
    return app;
  };
  const close = async (app: QueueApp) => {
    running.delete(app);
    await app.close();
  };

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    for (const app of running) await close(app);
    await redis?.stop();
  });

  it('lets a running handler finish before close() resolves, and stops taking new jobs meanwhile', async () => {
    const logs = new CollectingLogger();
    const first = await start(logs);
    const running = envelope('payment.succeeded');
    const id = running.eventId as string;
    const release = first.handlers.hold(id);
    expect(await postWebhook(first.url, running)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the handler started', () => first.handlers.count('entered', id) === 1);
    const closing = close(first);
    await waitFor('the worker stopped taking jobs', () => logs.messages('log').some((m) => m.includes('stopped taking jobs')));
    // the HTTP server is still up while the worker drains: these are queued, not run here (one
    // that a fetch already under way brings is handed back without running)
    const later = Array.from({ length: 3 }, () => envelope('payment.succeeded'));
    for (const e of later) expect(await postWebhook(first.url, e)).toMatchObject({ status: 200, json: { queued: true } });
    expect(first.handlers.count('done', id)).toBe(0);
    release();
    await closing;
    expect(first.handlers.count('done', id)).toBe(1);
    const laterIds = later.map((e) => e.eventId as string);
    expect(laterIds.filter((l) => first.handlers.count('entered', l) > 0)).toEqual([]);

    const second = await start();
    const total = (l: string) => first.handlers.count('done', l) + second.handlers.count('done', l);
    await waitFor('the next worker ran the events queued during shutdown', () => laterIds.every((l) => total(l) === 1));
    // the finished one was recorded: a copy is a duplicate and nothing runs again
    expect(await postWebhook(second.url, running)).toMatchObject({ status: 200, json: { duplicate: true } });
    await sleep(200);
    expect(second.handlers.count('entered', id)).toBe(0);
    expect(laterIds.map(total)).toEqual([1, 1, 1]);
    await close(second);
  });

  it('gives up a handler still running after the time-out: close() returns and another worker runs the event', async () => {
    const logs = new CollectingLogger();
    const first = await start(logs);
    const stuck = envelope('payment.succeeded');
    const id = stuck.eventId as string;
    first.handlers.hang.add(id); // never finishes in this app (as if the process were about to exit)
    expect(await postWebhook(first.url, stuck)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the handler started', () => first.handlers.count('entered', id) === 1);
    // resolves although the handler never will: it was given up after queueShutdownTimeoutMs
    await close(first);
    expect(first.handlers.count('done', id)).toBe(0);
    expect(logs.messages('warn').filter((m) => m.includes('of shutdown'))).toEqual([
      expect.stringMatching(/^Worker of account default after \d+ ms of shutdown: 1 job\(s\) whose handlers are still running: leaving their events to another worker$/),
    ]);

    const second = await start();
    await waitFor('another worker ran the event', () => second.handlers.count('done', id) === 1, 15_000);
    expect(second.handlers.count('entered', id)).toBe(1);
    expect(await second.deadLetters.get(id)).toBeUndefined();
  });

  it('a handler given up at shutdown that finishes after close() says its event is left to another worker (not that its job was recorded)', async () => {
    const logs = new CollectingLogger();
    const first = await start(logs, { payment: { queueShutdownTimeoutMs: 500, redisKeyPrefix: 'finished-late:' } });
    const late = envelope('payment.succeeded');
    const id = late.eventId as string;
    const release = first.handlers.hold(id);
    expect(await postWebhook(first.url, late)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the handler started', () => first.handlers.count('entered', id) === 1);
    await close(first);
    release();
    await waitFor('the late completion was said', () => logs.messages('error').some((m) => m.includes(id)));
    const said = logs.messages('error').filter((m) => m.includes(id));
    expect(said).toEqual([expect.stringContaining('the app had shut down before they finished')]);
    expect(said.join('\n')).not.toContain('recorded completed');

    // and so it is: another worker runs the event again
    const second = await start(undefined, { payment: { redisKeyPrefix: 'finished-late:' } });
    await waitFor('another worker ran the event', () => second.handlers.count('done', id) === 1, 15_000);
  });

  it('counts a handler that outlived its attempt (queueJobTimeoutMs) once in the shutdown line', async () => {
    const logs = new CollectingLogger();
    const app = await start(logs, { payment: { queueJobTimeoutMs: 1000, queueAttempts: 5, queueBackoffMs: 60_000, redisKeyPrefix: 'timed-out:' } });
    const slow = envelope('payment.succeeded');
    const id = slow.eventId as string;
    app.handlers.hang.add(id);
    expect(await postWebhook(app.url, slow)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the attempt timed out', () => logs.messages('warn').some((m) => m.includes(id)) || logs.messages('error').some((m) => m.includes(id)));
    await close(app);
    // was "2 job(s)": the handlers' run and the clean-up waiting on it were both counted
    expect(logs.messages('warn').filter((m) => m.includes('of shutdown'))).toEqual([
      expect.stringMatching(/^Worker of account default after \d+ ms of shutdown: 1 job\(s\) whose handlers are still running: leaving their events to another worker$/),
    ]);
  });

  it('a claim still on its way when shutdown gives up on it starts nothing: no handler runs in an app whose close() resolved', async () => {
    // a store of the app's own whose claims are slow (a remote database): the claim outlives queueShutdownTimeoutMs
    const inner = new MemoryWebhookEventStore();
    let claimDelayMs = 0;
    const store: WebhookEventStore = {
      claim: async (key, leaseMs) => {
        await sleep(claimDelayMs);
        return inner.claim(key, leaseMs);
      },
      complete: (key, token, retentionMs) => inner.complete(key, token, retentionMs),
      release: (key, token) => inner.release(key, token),
      extend: (key, token, leaseMs) => inner.extend(key, token, leaseMs),
      isProcessed: (key) => inner.isProcessed(key),
    };
    const app = await start(undefined, { payment: { store, queueShutdownTimeoutMs: 200, redisKeyPrefix: 'late-claim:' } });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    claimDelayMs = 800;
    expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await sleep(100); // the worker took the job; its claim is on its way
    await close(app);
    await sleep(1_500); // the claim has been answered by now
    // was 1: the handlers started after close() resolved (and could run beside another worker's run)
    expect(app.handlers.count('entered', id)).toBe(0);
  });

  it("a finished handler whose completion waits on a hung store is recorded completed at close(), never run again by another worker", async () => {
    // the event store hangs (as a Redis store on a partitioned connection does until redisTimeoutMs):
    // shutdown stops waiting on it at once, mid-attempt, so the job is recorded completed while the
    // worker is still open; a completion still waiting at worker.close() left the job to be taken over
    const store = new HangingStore(new MemoryWebhookEventStore());
    const logger = new CollectingLogger();
    // a queue of its own: workers the tests above left running must not take the job
    const payment = { store, redisTimeoutMs: 10_000, redisKeyPrefix: 'hung-store:' };
    const first = await start(logger, { payment });
    const event = envelope('refund.succeeded');
    const id = event.eventId as string;
    const release = first.handlers.hold(id);
    expect(await postWebhook(first.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the handler started', () => first.handlers.count('entered', id) === 1);
    store.hanging = true;
    release();
    await waitFor('the handler finished', () => first.handlers.count('done', id) === 1);
    const closing = Date.now();
    await close(first);
    expect(Date.now() - closing).toBeLessThan(5_000);
    expect(logger.messages('error')).toContainEqual(expect.stringMatching(/^Handlers of webhook event ".*" succeeded but completion could not be recorded \(Error: shutdown stopped waiting for the store\); the job is recorded completed/));

    const jobs = new Queue('default', { connection: { url: redis.url }, prefix: 'hung-store:_queue' });
    try {
      expect(await jobs.getJobState(paymentEventJobId('default', id))).toBe('completed');
    } finally {
      await jobs.close();
    }
    store.hanging = false;
    const second = await start(undefined, { payment });
    await sleep(2_500); // a lock of 1 s: a job left active would be taken over by now
    expect(second.handlers.count('entered', id)).toBe(0);
    await close(second);
  });

  it('with several queue accounts, close() stops every worker at once and drains them together: one time-out, no job taken meanwhile', async () => {
    const shutdownMs = 1500;
    // its own key prefix: the earlier tests' apps still run on the default one
    const payment = { ...FAST_QUEUE_OPTIONS, redisKeyPrefix: 'two-accounts:', queueShutdownTimeoutMs: shutdownMs };
    const accounts: QueueAppOptions = { namedAccount: 'eu', payment };
    const closing = await start(undefined, accounts);
    // web-only, as another instance of a rolling deploy: it queues, the closing app's workers are the only ones
    const web = await start(undefined, { ...accounts, payment: { ...payment, queueWorker: false } });
    const [stuckDefault, stuckEu] = [envelope('payment.succeeded'), envelope('payment.succeeded')];
    for (const e of [stuckDefault, stuckEu]) closing.handlers.hang.add(e.eventId as string);
    expect(await postWebhook(closing.url, stuckDefault)).toMatchObject({ status: 200, json: { queued: true } });
    expect(await postWebhook(closing.url, stuckEu, { path: 'payments/eu/webhook' })).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('both handlers hang', () => [stuckDefault, stuckEu].every((e) => closing.handlers.count('entered', e.eventId as string) === 1));

    const startedAt = Date.now();
    const closed = close(closing).then(() => Date.now() - startedAt);
    await sleep(300);
    // queued while the app closes: neither account of the closing app may take them
    const [laterDefault, laterEu] = [envelope('payment.succeeded'), envelope('payment.succeeded')];
    expect(await postWebhook(web.url, laterDefault)).toMatchObject({ status: 200, json: { queued: true } });
    expect(await postWebhook(web.url, laterEu, { path: 'payments/eu/webhook' })).toMatchObject({ status: 200, json: { queued: true } });
    // one time-out for all accounts, not one per account
    expect(await closed).toBeLessThan(shutdownMs * 1.7);
    for (const e of [laterDefault, laterEu]) expect(closing.handlers.count('entered', e.eventId as string)).toBe(0);

    // nothing lost: the next worker runs them
    const next = await start(undefined, accounts);
    for (const e of [laterDefault, laterEu]) await waitFor(`${e.eventId} ran in the next worker`, () => next.handlers.count('done', e.eventId as string) === 1);
  });

  it('beside an inline account whose handler hangs, the workers stop taking jobs with the first account hook and drain meanwhile: two time-outs in all, not three', async () => {
    const timeoutMs = 2000;
    const payment = { ...FAST_QUEUE_OPTIONS, redisKeyPrefix: 'mixed-accounts:', queueShutdownTimeoutMs: timeoutMs, webhookShutdownTimeoutMs: timeoutMs };
    const accounts: QueueAppOptions = { namedAccount: 'eu', namedPayment: { processing: 'inline' }, payment, forceCloseConnections: true };
    const closing = await start(undefined, accounts);
    const web = await start(undefined, { ...accounts, payment: { ...payment, queueWorker: false } });
    const [stuckQueued, stuckInline] = [envelope('payment.succeeded'), envelope('payment.succeeded')];
    for (const e of [stuckQueued, stuckInline]) closing.handlers.hang.add(e.eventId as string);
    expect(await postWebhook(closing.url, stuckQueued)).toMatchObject({ status: 200, json: { queued: true } });
    const inlineAnswer = postWebhook(closing.url, stuckInline, { path: 'payments/eu/webhook' }); // answered when the app gives up
    await waitFor('both handlers hang', () => [stuckQueued, stuckInline].every((e) => closing.handlers.count('entered', e.eventId as string) === 1));

    const startedAt = Date.now();
    const closed = close(closing).then(() => Date.now() - startedAt);
    await sleep(300);
    const later = envelope('payment.succeeded');
    expect(await postWebhook(web.url, later)).toMatchObject({ status: 200, json: { queued: true } });
    // the inline account's two waits (module destroy, then shutdown), the worker's drain inside the
    // first (a third wait after them would take 3 × timeoutMs); the rest is closing connections
    expect(await closed).toBeLessThan(timeoutMs * 2 + 1800);
    await inlineAnswer.catch(() => undefined);
    expect(closing.handlers.count('entered', later.eventId as string)).toBe(0);
    const next = await start(undefined, accounts);
    await waitFor(`${later.eventId} ran in the next worker`, () => next.handlers.count('done', later.eventId as string) === 1);
  });

  // With the queue's Redis down, close() returns at once, but the idle worker's pending wait for
  // jobs never settles (ioredis keeps it for a reconnect that the close cancels): BullMQ's timer
  // guarding it (drainDelay + 1 s) keeps the process alive until it fires. Measured in a child
  // process, which must end by itself.
  it("with the queue's Redis down, the process ends within about 2 s of app.close(), not BullMQ's 6 s", async () => {
    const own = await startRedisServer(); // its own: stopped below, while the other tests' apps use the shared one
    const child = await startChildApp('test/reliability/fixtures/closing-app.ts', {
      PAYMENT_BASE_URL: 'http://127.0.0.1:9',
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      PAYMENT_PROCESSING: 'queue',
      PAYMENT_QUEUE_REDIS_URL: own.url,
    });
    try {
      const event = envelope('payment.succeeded');
      expect(await postWebhook(child.url!, event)).toMatchObject({ status: 200, json: { queued: true } });
      // once a copy is a duplicate the worker has run the event and started its next wait for jobs
      await waitFor('the worker ran the event', async () => (await postWebhook(child.url!, event)).json.duplicate === true);
      await own.stop();
      const closedAt = new Promise<number>((resolve) => child.proc.stdout!.on('data', () => child.output().includes('CLOSED\n') && resolve(Date.now())));
      const exited = new Promise<[number | null, number]>((resolve) => child.proc.once('exit', (code) => resolve([code, Date.now()])));
      child.proc.kill('SIGTERM');
      const [code, exitedAt] = await exited;
      expect(code).toBe(0);
      expect(child.output()).toContain('CLOSED');
      // about 2 s here; with BullMQ's default drainDelay (5 s) the process lived on about 6 s
      expect(exitedAt - (await closedAt)).toBeLessThan(3500);
    } finally {
      await child.kill();
      await own.stop();
    }
  });
});
