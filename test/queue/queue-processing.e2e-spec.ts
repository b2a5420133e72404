import 'reflect-metadata';
import { Queue } from 'bullmq';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import type { PaymentEventJobData } from '../../lib/queue/payment-event-job.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { FAST_QUEUE_OPTIONS, type QueueApp, QueueHandlers, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PaymentModule } from '../../lib/payment.module.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// One app that receives and works (the default for processing: 'queue'), on a real Redis.
describe('queue mode: acknowledgement, deduplication and retries', () => {
  let redis: TestRedisServer;
  let q: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    q = await startQueueApp(redis.url);
  });
  afterAll(async () => {
    await q?.close();
    await redis?.stop();
  });

  it('answers 200 {received, queued} while the handler has not finished, then runs it', async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const release = q.handlers.hold(id);
    // the handler waits for release(): the answer cannot have waited for it
    const response = await postWebhook(q.url, event);
    expect(response).toMatchObject({ status: 200, json: { received: true, queued: true } });
    await waitFor('the held handler ran', () => q.handlers.count('entered', id) === 1);
    expect(q.handlers.count('done', id)).toBe(0);
    release();
    await waitFor('the handler finished', () => q.handlers.count('done', id) === 1);
    expect(q.handlers.accounts.get(id)).toBe('default');
  });

  it('runs the handlers once for 10 concurrent copies of one event; later copies are duplicates', async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const responses = await Promise.all(Array.from({ length: 10 }, () => postWebhook(q.url, event)));
    for (const r of responses) {
      expect(r.status).toBe(200);
      expect([{ received: true, queued: true }, { received: true, duplicate: true }]).toContainEqual(r.json);
    }
    await waitFor('the event was handled', () => q.handlers.count('done', id) === 1);
    await sleep(300);
    expect(q.handlers.count('entered', id)).toBe(1);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    await sleep(100);
    expect(q.handlers.count('entered', id)).toBe(1);
  });

  it('adds one job for copies of an event that arrive while it is still being handled', async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const release = q.handlers.hold(id);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the held handler ran', () => q.handlers.count('entered', id) === 1);
    // not processed yet, so the route cannot answer "duplicate": each copy is added again, with the same job id
    const copies = await Promise.all(Array.from({ length: 9 }, () => postWebhook(q.url, event)));
    expect(copies.map((r) => r.json)).toEqual(Array.from({ length: 9 }, () => ({ received: true, queued: true })));
    // the module's queue is a real BullMQ Queue; the module types only what it calls
    const queue = q.app.get(PaymentAccountRegistry).requireQueue('default').queue as unknown as Queue<PaymentEventJobData>;
    const pending = await queue.getJobs(['active', 'waiting', 'delayed', 'prioritized']);
    expect(pending.filter((job) => job.data.event.eventId === id)).toHaveLength(1);
    release();
    await waitFor('the event was handled', () => q.handlers.count('done', id) === 1);
    await sleep(600); // longer than a delayed copy's wait (the worker's in-flight delay)
    expect(q.handlers.count('entered', id)).toBe(1);
  });

  it('retries a handler that fails twice: the third attempt succeeds within seconds', async () => {
    const event = envelope('payment.failed');
    const id = event.eventId as string;
    q.handlers.failTimes.set(id, 2);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    // backoff of 50 ms then 100 ms here (FAST_QUEUE_OPTIONS); the guard only bounds a hang
    await waitFor('the third attempt succeeded', () => q.handlers.count('done', id) === 1, 10_000);
    expect(q.handlers.count('entered', id)).toBe(3);
    expect(await q.deadLetters.get(id)).toBeUndefined();
  });

  it('hands handlers the event as received, with the module fields set by the worker', async () => {
    const event = envelope('refund.succeeded', { account: 'forged', receivedAt: 'forged' });
    const id = event.eventId as string;
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('the event was handled', () => q.handlers.count('done', id) === 1);
    expect(q.handlers.accounts.get(id)).toBe('default');
  });

  it('queues events whose ids BullMQ would refuse as job ids (integers, colons)', async () => {
    const events = ['12345', 'evt:a:b:c:d', 'evt:x'].map((eventId) => envelope('payment.succeeded', { eventId: `${eventId}-${Date.now()}` }));
    events.push(envelope('payment.succeeded', { eventId: String(Date.now()) }));
    for (const e of events) expect(await postWebhook(q.url, e)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor('every event was handled', () => events.every((e) => q.handlers.count('done', e.eventId as string) === 1));
  });

  it('waits, without using attempts, while another instance holds the event (an inline instance on the same store)', async () => {
    // e.g. during a migration from inline to queue mode: both share the store's claims
    const inline = await startQueueApp(redis.url, { payment: { processing: 'inline', redisUrl: redis.url } });
    try {
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      inline.handlers.slowMs.set(id, 1500);
      const inlineDelivery = postWebhook(inline.url, event);
      await waitFor('the inline handler runs', () => inline.handlers.count('entered', id) === 1);
      // the same event reaches the queue-mode instance while the inline handler holds the claim
      expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { queued: true } });
      expect(await inlineDelivery).toMatchObject({ status: 200, json: { received: true } });
      // the worker polled the foreign claim (about 6 times, more than queueAttempts), then found it processed
      const queue = q.app.get(PaymentAccountRegistry).requireQueue('default');
      await waitFor('the job completed', async () => (await (await queue.queue.getJob(queue.jobId(id)))?.getState()) === 'completed');
      expect(q.handlers.count('entered', id)).toBe(0);
      expect(inline.handlers.count('done', id)).toBe(1);
      expect(await q.deadLetters.get(id)).toBeUndefined();
      expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    } finally {
      await inline.close();
    }
  });

  it("a worker never runs an event of the other environment: sandbox and live apps given one redisKeyPrefix share a queue, and a live event waits for a live worker", async () => {
    const prefix = 'shared-env:';
    const logger = new CollectingLogger();
    const liveWeb = await startQueueApp(redis.url, { payment: { redisKeyPrefix: prefix, environment: 'live', queueWorker: false } });
    // created last: Nest's logger is one per process, the last app's
    const sandbox = await startQueueApp(redis.url, { payment: { redisKeyPrefix: prefix }, logger });
    let liveWorker: QueueApp | undefined;
    const jobs = new Queue('default', { connection: { url: redis.url }, prefix: `${prefix}_queue` });
    try {
      const events = [1, 2, 3].map(() => envelope('payment.succeeded', { environment: 'production' }));
      for (const event of events) expect((await postWebhook(liveWeb.url, event)).json).toEqual({ received: true, queued: true });
      await waitFor('the sandbox worker handed the live events back', async () => (await jobs.getDelayedCount()) === 3);
      for (const event of events) expect(sandbox.handlers.count('entered', event.eventId as string)).toBe(0);
      for (const job of await jobs.getDelayed()) expect(job.attemptsMade).toBe(0); // handed back, not failed
      const warnings = () => logger.lines.filter((line) => line.level === 'warn' && line.message.includes("not this app's; handed back"));
      await waitFor('the hand-back was logged', () => warnings().length > 0);
      expect(warnings()).toHaveLength(1); // once, not per job
      expect(warnings()[0]!.message).toContain('give each its own redisKeyPrefix');

      // a worker of their environment runs them, once each; the sandbox worker, still taking jobs,
      // may meet them again and hand them back again (promoted here: a hand-back waits 30 s)
      liveWorker = await startQueueApp(redis.url, { payment: { redisKeyPrefix: prefix, environment: 'live' } });
      const ranInLive = () => events.every((event) => liveWorker!.handlers.count('done', event.eventId as string) === 1);
      await waitFor('the live worker ran every event', async () => {
        for (const job of await jobs.getDelayed()) await job.promote().catch(() => undefined);
        return ranInLive();
      });
      for (const event of events) expect(sandbox.handlers.count('entered', event.eventId as string)).toBe(0);
    } finally {
      await jobs.close();
      await liveWorker?.close();
      await liveWeb.close();
      await sandbox.close();
    }
  });

  it('still rejects bad signatures and envelopes before anything is queued', async () => {
    const event = envelope('payment.succeeded');
    expect(await postWebhook(q.url, event, { secret: 'whsec_wrong' })).toMatchObject({ status: 401, json: { code: 'WEBHOOK_SIGNATURE_MISMATCH' } });
    expect(await postWebhook(q.url, { ...event, eventId: 42 })).toMatchObject({ status: 400, json: { code: 'WEBHOOK_INVALID_ENVELOPE' } });
    await sleep(200);
    expect(q.handlers.count('entered', event.eventId as string)).toBe(0);
  });
});

// The worker runs the same dispatch as the inline route: reconciliation with the account's
// client, then the handlers, then the re-emit on the host's EventEmitter2.
describe('queue mode against the simulator: reconciliation and re-emit run in the worker', () => {
  let redis: TestRedisServer;
  let sim: PaymentServiceSimulator;
  let q: QueueApp;
  let client: PaymentGatewayService;

  beforeAll(async () => {
    redis = await startRedisServer();
    sim = new PaymentServiceSimulator({ rateLimits: false });
    await sim.start();
    q = await startQueueApp(redis.url, {
      payment: { baseUrl: sim.url, clientId: 'sandbox-client', clientSecret: 'sandbox-secret', webhookSecret: 'whsec_sandbox', reconcile: true, maxRetries: 0 },
      eventEmitter: true,
    });
    sim.setWebhookUrl(1, `${q.url}/payments/webhook`);
    client = q.app.get(PaymentGatewayService);
  });
  afterAll(async () => {
    await q?.close();
    await sim?.stop();
    await redis?.stop();
  });

  const succeededFor = (trxId: string) => q.listener!.succeeded.filter((e) => (e.data as { trxId?: string }).trxId === trxId);

  it('re-emits each handled event once, with the canonical status read by the account client', async () => {
    sim.scriptNextPayment('succeed');
    const payment = await client.createPayment({ amount: '12.50', currency: 'USD' });
    await sim.waitForDeliveries();
    expect(sim.deliveryLog.filter((d) => d.status !== 200)).toEqual([]);
    await waitFor('the worker re-emitted payment.succeeded', () => succeededFor(payment.trxId!).length === 1);
    const [event] = succeededFor(payment.trxId!);
    expect(event).toMatchObject({ account: 'default', canonicalStatus: 'SUCCESS' });
    expect(q.handlers.count('done', event!.eventId)).toBe(1);
    await sleep(600);
    expect(succeededFor(payment.trxId!)).toHaveLength(1);
  });

  it('retries a failed status read in the worker (the delivery was already acknowledged), then handles the event once', async () => {
    sim.scriptNextPayment('succeed');
    sim.clearRequests();
    const payment = await client.createPayment({ amount: '13', currency: 'USD' });
    sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'status', status: 500, code: 'PAY_5003', times: 1 });
    await sim.waitForDeliveries();
    // the service got 200 queued for both events: the reconciliation failure is the worker's to retry
    expect(sim.deliveryLog.filter((d) => d.status !== 200)).toEqual([]);
    await waitFor('the worker re-emitted payment.succeeded', () => succeededFor(payment.trxId!).length === 1);
    const events = sim.events.filter((e) => (e.data as { trxId?: string }).trxId === payment.trxId);
    await waitFor('both events handled', () => events.every((e) => q.handlers.count('done', e.eventId) === 1));
    for (const e of events) expect(q.handlers.count('entered', e.eventId)).toBe(1);
    expect(succeededFor(payment.trxId!)[0]).toMatchObject({ canonicalStatus: 'SUCCESS' });
    // the fault was met: one status read failed, and was read again
    const statusReads = sim.requests.filter((r) => r.route === '/payment/status').map((r) => r.status);
    expect(statusReads[0]).toBe(500);
    expect(statusReads.filter((status) => status === 200).length).toBeGreaterThanOrEqual(2);
    expect(await q.deadLetters.list()).toEqual([]);
  });
});

describe('queue mode: queueConcurrency', () => {
  let redis: TestRedisServer;
  let q: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    q = await startQueueApp(redis.url, { payment: { queueConcurrency: 2 } });
  });
  afterAll(async () => {
    await q?.close();
    await redis?.stop();
  });

  it('runs at most queueConcurrency handlers at once in a worker; the next starts when one finishes', async () => {
    const events = [envelope('payment.succeeded'), envelope('payment.succeeded'), envelope('payment.succeeded')];
    const ids = events.map((event) => event.eventId as string);
    const releases = ids.map((id) => q.handlers.hold(id));
    for (const event of events) expect((await postWebhook(q.url, event)).status).toBe(200);
    const entered = () => ids.filter((id) => q.handlers.count('entered', id) > 0);
    await waitFor('two handlers running', () => entered().length === 2);
    await sleep(500); // a worker that ignored the setting would start the third by now
    expect(entered()).toHaveLength(2);
    releases[ids.indexOf(entered()[0]!)]!();
    await waitFor('the third handler started', () => entered().length === 3);
    for (const release of releases) release();
    await waitFor('all handled', () => ids.every((id) => q.handlers.count('done', id) === 1));
  });
});

describe('queue mode without a webhook secret', () => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  const secretWarnings = (logger: CollectingLogger) => logger.messages('warn').filter((line) => line.includes('no webhook secret'));

  it('warns at boot on a web-only instance (queueWorker: false: its deliveries would get 404), naming the variable', async () => {
    const logger = new CollectingLogger();
    const q = await startQueueApp(redis.url, { logger, payment: { webhookSecret: undefined, queueWorker: false } });
    try {
      expect(secretWarnings(logger)).toEqual([
        expect.stringMatching(/^Account 'default' has 1 @OnPaymentEvent handler\(s\) but no webhook secret \(PAYMENT_WEBHOOK_SECRET\)/),
      ]);
      expect((await postWebhook(q.url, envelope())).status).toBe(404);
    } finally {
      await q.close();
    }
  });

  it('an instance that runs the worker may be a worker process (with a health route): one log line, no warning', async () => {
    const logger = new CollectingLogger();
    const q = await startQueueApp(redis.url, { logger, payment: { webhookSecret: undefined } });
    try {
      expect(secretWarnings(logger)).toEqual([]);
      expect(logger.messages('log')).toContain(
        "Account 'default' has no webhook secret (PAYMENT_WEBHOOK_SECRET): this instance receives no webhooks and only runs the queue's worker",
      );
    } finally {
      await q.close();
    }
  });

  it('says nothing in a worker process run as an application context (it needs no secret)', async () => {
    const logger = new CollectingLogger();
    @Module({
      imports: [PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', queueRedisUrl: redis.url, ...FAST_QUEUE_OPTIONS })],
      providers: [QueueHandlers],
    })
    class WorkerModule {}
    const worker = await NestFactory.createApplicationContext(WorkerModule, { logger });
    try {
      expect(logger.messages('log')).toContain('1 @OnPaymentEvent handler(s) registered');
      expect(secretWarnings(logger)).toEqual([]);
    } finally {
      await worker.close();
    }
  });
});
