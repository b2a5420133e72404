import 'reflect-metadata';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import { PAYMENT_DEAD_LETTER_EVENT } from '../../lib/payment.constants.js';
import { PaymentDeadLetterBusyError } from '../../lib/queue/payment-queue.errors.js';
import { paymentEventJobId } from '../../lib/queue/payment-event-job.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

/**
 * Queues `event` through `app` and lets its attempts run until the last one (of `attempts`) has
 * started and waits; resolves with what lets that last attempt go on. Each attempt waits at its
 * own gate: a new gate is set before the previous one opens.
 */
async function queuedUntilLastAttempt(app: QueueApp, event: Record<string, unknown>, attempts: number): Promise<() => void> {
  const id = event.eventId as string;
  let release = app.handlers.hold(id);
  expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } });
  for (let attempt = 1; attempt < attempts; attempt++) {
    await waitFor(`attempt ${attempt} started`, () => app.handlers.count('entered', id) === attempt);
    const previous = release;
    release = app.handlers.hold(id);
    previous();
  }
  await waitFor('the last attempt started', () => app.handlers.count('entered', id) === attempts);
  return release;
}

describe('queue mode: dead letters', () => {
  let redis: TestRedisServer;
  let q: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    q = await startQueueApp(redis.url, { namedAccount: 'eu', eventEmitter: true });
  });
  afterAll(async () => {
    await q?.close();
    await redis?.stop();
  });

  /** Posts an event whose handler always fails to `app` (the suite's by default) and waits until it is a dead letter. */
  async function deadLetterOf(account = 'default', app: QueueApp = q) {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    app.handlers.failing.add(id);
    const path = account === 'default' ? 'payments/webhook' : `payments/${account}/webhook`;
    expect(await postWebhook(app.url, event, { path })).toMatchObject({ status: 200, json: { received: true, queued: true } });
    await waitFor(`${id} is a dead letter`, async () => (await app.deadLetters.get(id, account)) !== undefined);
    return { event, id };
  }

  it('keeps an always-failing event with its payload and error after the last attempt, and announces it', async () => {
    const before = Date.now();
    const { event, id } = await deadLetterOf();
    expect(q.handlers.count('entered', id)).toBe(3);
    expect(q.handlers.count('done', id)).toBe(0);
    const letter = (await q.deadLetters.get(id))!;
    expect(letter).toMatchObject({ account: 'default', eventId: id, eventType: 'payment.succeeded', attempts: 3, event });
    expect(letter.lastError).toContain('downstream always failing');
    expect(letter.lastError).toContain('QueueHandlers.handle');
    expect(letter.receivedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(letter.failedAt.getTime()).toBeGreaterThanOrEqual(letter.receivedAt.getTime());
    expect(letter.expiresAt.getTime() - letter.failedAt.getTime()).toBe(30 * 24 * 3600 * 1000);
    expect((await q.deadLetters.list()).map((l) => l.eventId)).toContain(id);
    await waitFor('the dead-letter event was emitted', () => q.listener!.received.some((l) => l.eventId === id));
    expect(q.listener!.received.filter((l) => l.eventId === id)).toEqual([expect.objectContaining({ eventId: id, attempts: 3 })]);
  });

  it("announces it on a host EventEmitterModule.forRoot({ global: false }) too (it went unannounced: the worker looked for a global emitter only)", async () => {
    const own = await startQueueApp(redis.url, { eventEmitter: 'not global', payment: { redisKeyPrefix: 'not-global-emitter:' } });
    try {
      const { id } = await deadLetterOf('default', own);
      await waitFor('the dead-letter event was emitted', () => own.listener!.received.some((l) => l.eventId === id));
    } finally {
      await own.close();
    }
  });

  it("keeps the event as the service signed it, less the fields the module sets (a body's own account, canonicalStatus, receivedAt)", async () => {
    const event: Record<string, unknown> = { ...envelope('payment.succeeded'), account: 'eu', canonicalStatus: 'FORGED', receivedAt: '1999-01-01T00:00:00Z' };
    const id = event.eventId as string;
    q.handlers.failing.add(id);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } });
    await waitFor(`${id} is a dead letter`, async () => (await q.deadLetters.get(id)) !== undefined);
    const letter = (await q.deadLetters.get(id))!;
    const { account: _a, canonicalStatus: _c, receivedAt: _r, ...signed } = event;
    expect(letter.account).toBe('default');
    expect(letter.event).toEqual(signed);
    await waitFor('the dead-letter event was emitted', () => q.listener!.received.some((l) => l.eventId === id));
    expect(q.listener!.received.find((l) => l.eventId === id)!.event).toEqual(signed);
  });

  it('hands a job of a later release (layout v2, a rolling upgrade) back to the queue, unrun and not failed', async () => {
    const jobs = new Queue('default', { connection: { url: redis.url }, prefix: 'payment-gateway:sandbox:_queue' });
    try {
      const later = envelope('payment.succeeded');
      const job = await jobs.add('payment.succeeded', { v: 2, account: 'default', event: later, receivedAt: new Date().toISOString() }, { attempts: 3 });
      await waitFor('a worker looked at it and handed it back', async () => (await jobs.getJobState(job.id!)) === 'delayed');
      const delayed = (await jobs.getJob(job.id!))!;
      expect(delayed.attemptsMade).toBe(0);
      expect(delayed.delay).toBeGreaterThan(20_000);
      expect(q.handlers.count('entered', later.eventId as string)).toBe(0);
      expect(await q.deadLetters.get(later.eventId as string)).toBeUndefined();
      await delayed.remove();
    } finally {
      await jobs.close();
    }
  });

  it("leaves a job it did not write alone: another producer's job in the account's queue fails at once, unrun, and is no dead letter", async () => {
    const foreign = new Queue('default', { connection: { url: redis.url }, prefix: 'payment-gateway:sandbox:_queue' });
    try {
      const job = await foreign.add('send-email', { to: 'someone@example.com' }, { attempts: 3 });
      await waitFor('the foreign job failed', async () => (await foreign.getJobState(job.id!)) === 'failed');
      const failed = (await foreign.getJob(job.id!))!;
      expect(failed.attemptsMade).toBe(1); // at once, its other attempts unused
      expect(failed.failedReason).toContain('not an event job of nestjs-payment-gateway');
      expect((await q.deadLetters.list({ limit: 1000 })).map((l) => l.eventId)).not.toContain(undefined);
      // no handler saw it (every run is counted by eventId)
      expect([...q.handlers.entered.keys()].filter((id) => typeof id !== 'string' || id === '')).toEqual([]);
      await failed.remove();
      // an event job whose account was edited in Redis runs as the account whose queue holds it
      const edited = envelope('payment.succeeded');
      await foreign.add('payment.succeeded', { v: 1, account: 'someone-else', event: edited, receivedAt: 'not a date' });
      await waitFor('the edited job ran', () => q.handlers.count('done', edited.eventId as string) === 1);
      expect(q.handlers.accounts.get(edited.eventId as string)).toBe('default');
      // and its dead letter is the queue's account's too, received when it failed if its own time is none
      const editedFailing = envelope('payment.succeeded');
      q.handlers.failing.add(editedFailing.eventId as string);
      const editedId = editedFailing.eventId as string;
      await foreign.add(
        'payment.succeeded',
        { v: 1, account: 'someone-else', event: editedFailing, receivedAt: 'not a date' },
        { attempts: 1, jobId: paymentEventJobId('default', editedId) },
      );
      const find = async () => (await q.deadLetters.list({ limit: 1000 })).find((l) => l.eventId === editedId);
      await waitFor('the edited job is a dead letter', async () => (await find()) !== undefined);
      expect(await q.deadLetters.get(editedId)).toMatchObject({ account: 'default', eventId: editedId });
      const letter = (await find())!;
      expect(letter.account).toBe('default');
      expect(Number.isNaN(letter.receivedAt.getTime())).toBe(false);
      q.handlers.failing.delete(editedFailing.eventId as string);
    } finally {
      await foreign.close();
    }
  });

  it("a new delivery of a dead letter (the portal's re-trigger) replays it: once, with fresh attempts, not a dead letter any more", async () => {
    const { event, id } = await deadLetterOf();
    q.handlers.failing.delete(id);
    // two copies at once: one replay, one run
    const answers = await Promise.all([postWebhook(q.url, event), postWebhook(q.url, event)]);
    // the replaying copy is `queued`; the other too, or `duplicate` when it looks again after the replay ran
    for (const answer of answers) expect(answer).toMatchObject({ status: 200, json: { received: true } });
    expect(answers.map((a) => (a.json as { queued?: boolean }).queued === true).filter(Boolean).length).toBeGreaterThanOrEqual(1);
    for (const { json } of answers) expect((json as { queued?: boolean }).queued === true || (json as { duplicate?: boolean }).duplicate === true).toBe(true);
    await waitFor('the re-delivered event was handled', () => q.handlers.count('done', id) === 1);
    await sleep(300);
    expect(q.handlers.count('entered', id)).toBe(4);
    expect(await q.deadLetters.get(id)).toBeUndefined();
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(q.handlers.count('done', id)).toBe(1);
  });

  it('a copy delivered while its event is on its last attempt is answered 409, as inline: the service retries, and its retry replays the dead letter', async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    q.handlers.failing.add(id);
    const release = await queuedUntilLastAttempt(q, event, 3);
    // were it acknowledged, this copy would add nothing, and the failing last attempt would leave a dead letter the service thinks delivered
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    release();
    await waitFor(`${id} is a dead letter`, async () => (await q.deadLetters.get(id)) !== undefined);

    q.handlers.failing.delete(id);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } }); // the service's retry
    await waitFor('the retry replayed it', () => q.handlers.count('done', id) === 1);
    expect(q.handlers.count('entered', id)).toBe(4);
    expect(await q.deadLetters.get(id)).toBeUndefined();
  });

  it("a copy delivered during the last attempt is answered 409 by an instance with more queueAttempts too (the job's own limit counts)", async () => {
    // a rolling deploy: the worker queued the event with 3 attempts, the new web-only instance has 5
    const payment = { redisKeyPrefix: 'rolling-attempts:', queueAttempts: 3 };
    const worker = await startQueueApp(redis.url, { payment });
    const web = await startQueueApp(redis.url, { payment: { ...payment, queueAttempts: 5, queueWorker: false } });
    try {
      const event = envelope('payment.succeeded');
      const id = event.eventId as string;
      worker.handlers.failing.add(id);
      const release = await queuedUntilLastAttempt(worker, event, 3);
      // acknowledged, this copy would add nothing and the event would end a dead letter the service thinks delivered
      expect(await postWebhook(web.url, event)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
      release();
      await waitFor(`${id} is a dead letter`, async () => (await web.deadLetters.get(id)) !== undefined);
      expect(await web.deadLetters.get(id)).toMatchObject({ attempts: 3 });
    } finally {
      await web.close();
      await worker.close();
    }
  });

  it('of copies arriving together (in one millisecond, on one or several instances) only the one that queued the event is acknowledged while its one attempt is its last', async () => {
    const payment = { redisKeyPrefix: 'one-attempt-copies:', queueAttempts: 1 };
    const app = await startQueueApp(redis.url, { payment });
    const web = await startQueueApp(redis.url, { payment: { ...payment, queueWorker: false } });
    try {
      for (let round = 0; round < 6; round++) {
        const event = envelope('payment.succeeded');
        const id = event.eventId as string;
        const release = app.handlers.hold(id);
        // odd rounds: half of the copies reach another instance
        const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => postWebhook(round % 2 === 1 && i % 2 === 1 ? web.url : app.url, event)));
        // were two acknowledged, the second would add nothing, and a failure of that one attempt would leave a dead letter the service thinks delivered
        expect(answers.filter((a) => a.status === 200)).toEqual([expect.objectContaining({ json: { received: true, queued: true } })]);
        expect(answers.filter((a) => a.status !== 200).map((a) => a.json?.code)).toEqual(Array(7).fill('WEBHOOK_EVENT_IN_FLIGHT'));
        release();
        await waitFor(`${id} ran`, () => app.handlers.count('done', id) === 1);
      }
    } finally {
      await web.close();
      await app.close();
    }
  });

  it('the one delivery of an event whose dead letter was discarded a moment ago queues it and is acknowledged (queueAttempts 1)', async () => {
    const app = await startQueueApp(redis.url, { payment: { redisKeyPrefix: 'one-attempt-discard:', queueAttempts: 1 } });
    try {
      const { event, id } = await deadLetterOf('default', app);
      expect(await app.deadLetters.discard(id)).toBe(true);
      app.handlers.failing.delete(id);
      // the portal's re-trigger, the only delivery there is: it queues the event again
      expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } });
      await waitFor(`${id} ran`, () => app.handlers.count('done', id) === 1);
    } finally {
      await app.close();
    }
  });

  it('replay after the fix runs the handlers once and empties the dead letter', async () => {
    const { event, id } = await deadLetterOf();
    q.handlers.failing.delete(id);
    expect(await q.deadLetters.replay(id)).toBe(true);
    await waitFor('the replayed event was handled', () => q.handlers.count('done', id) === 1);
    await sleep(200);
    expect(q.handlers.count('entered', id)).toBe(4);
    expect(await q.deadLetters.get(id)).toBeUndefined();
    expect((await q.deadLetters.list()).map((l) => l.eventId)).not.toContain(id);
    expect(await q.deadLetters.replay(id)).toBe(false);
    expect(await postWebhook(q.url, event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(q.handlers.count('done', id)).toBe(1);
  });

  it("a replay gives the event back its take-overs: BullMQ's count of the stalls of its killed workers starts again", async () => {
    const { id } = await deadLetterOf();
    const queue = q.app.get(PaymentAccountRegistry).requireQueue('default');
    const client = new Redis(redis.url);
    try {
      const jobKey = `payment-gateway:sandbox:_queue:default:${queue.jobId(id)}`;
      await client.hset(jobKey, 'stc', '2'); // as BullMQ leaves it after two workers died running it
      q.handlers.failing.delete(id);
      expect(await q.deadLetters.replay(id)).toBe(true);
      await waitFor('the replayed event was handled', () => q.handlers.count('done', id) === 1);
      expect(await client.hget(jobKey, 'stc')).toBeNull();
    } finally {
      client.disconnect();
    }
  });

  it('a replayed event that fails again gets a fresh set of attempts and becomes a dead letter again', async () => {
    const { id } = await deadLetterOf();
    const announced = q.listener!.received.length;
    expect(await q.deadLetters.replay(id)).toBe(true);
    await waitFor('the event is a dead letter again', () => q.listener!.received.length > announced);
    expect(q.handlers.count('entered', id)).toBe(6);
    expect(await q.deadLetters.get(id)).toMatchObject({ attempts: 3 });
  });

  it('replay and discard of one dead letter at the same moment: exactly one acts, a replayed event is never removed', async () => {
    const letters = await Promise.all(Array.from({ length: 5 }, () => deadLetterOf()));
    for (const { id } of letters) q.handlers.failing.delete(id);
    const outcomes = await Promise.all(letters.map(({ id }) => Promise.all([q.deadLetters.replay(id), q.deadLetters.discard(id)])));
    // replay asked first, so it wins; the discard then finds no dead letter
    expect(outcomes).toEqual(letters.map(() => [true, false]));
    for (const { id } of letters) await waitFor(`${id} was handled after its replay`, () => q.handlers.count('done', id) === 1);
  });

  it('replay in one instance and discard in another at the same moment: one acts, a replayed event is never removed', async () => {
    const letters = await Promise.all(Array.from({ length: 16 }, () => deadLetterOf()));
    for (const { id } of letters) q.handlers.failing.delete(id);
    const other = await startQueueApp(redis.url); // same Redis and key prefix: the same queue
    try {
      // staggered by 0 to 3 ms, so their Redis round trips interleave in different ways
      const after = <T>(ms: number, act: () => Promise<T>) => sleep(ms).then(act);
      const outcomes = await Promise.all(
        letters.map(({ id }, i) => Promise.all([after(i % 4, () => q.deadLetters.replay(id)), after(3 - (i % 4), () => other.deadLetters.discard(id))])),
      );
      for (const [[replayed, discarded], { id }] of outcomes.map((o, i) => [o, letters[i]!] as const)) {
        expect([replayed, discarded]).not.toEqual([true, true]);
        expect(replayed || discarded).toBe(true);
        if (replayed) {
          await waitFor(`${id} was handled after its replay`, () => q.handlers.count('done', id) + other.handlers.count('done', id) === 1);
        }
      }
    } finally {
      await other.close();
    }
  });

  it('two replays of one dead letter at the same moment (a double click) run it once, even when that run fails at once', async () => {
    // one attempt: the replayed run fails and is a dead letter again within milliseconds
    const quick = await startQueueApp(redis.url, { payment: { redisKeyPrefix: 'one-attempt:', queueAttempts: 1 }, eventEmitter: true });
    try {
      for (let round = 0; round < 5; round++) {
        const event = envelope('payment.succeeded');
        const id = event.eventId as string;
        quick.handlers.failing.add(id);
        expect(await postWebhook(quick.url, event)).toMatchObject({ status: 200, json: { received: true, queued: true } });
        await waitFor(`${id} is a dead letter`, async () => (await quick.deadLetters.get(id)) !== undefined);
        // its announcement may come a moment after the failed set has it: counted before the replays
        await waitFor(`${id} was announced`, () => quick.listener!.received.some((letter) => letter.eventId === id));
        const announced = quick.listener!.received.length;
        const replays = await Promise.all([quick.deadLetters.replay(id), quick.deadLetters.replay(id), quick.deadLetters.discard(id)]);
        expect(replays.filter(Boolean)).toHaveLength(1);
        if (replays[2]) continue; // the discard came first: nothing ran
        await waitFor(`${id} is a dead letter again`, () => quick.listener!.received.length > announced);
        await sleep(300);
        expect(quick.handlers.count('entered', id)).toBe(2); // the first run and one replay
        expect(quick.listener!.received.length).toBe(announced + 1);
        expect(await quick.deadLetters.get(id)).toBeDefined(); // the new dead letter stays
      }
    } finally {
      await quick.close();
    }
  });

  it('a replay or discard that waits 10 s for the lock of another one rejects with PaymentDeadLetterBusyError and does nothing', async () => {
    const { id } = await deadLetterOf();
    const queue = q.app.get(PaymentAccountRegistry).requireQueue('default');
    const client = new Redis(redis.url);
    try {
      // another instance's replay of it, still under way
      await client.set(`${queue.options.redisKeyPrefix}default:dead-letter-lock:${id}`, 'another-instance', 'PX', 60_000);
      const error = await q.deadLetters.discard(id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentDeadLetterBusyError);
      expect(error).toMatchObject({ code: 'DEAD_LETTER_BUSY', account: 'default', eventId: id });
      expect(await q.deadLetters.get(id)).toBeDefined();
    } finally {
      client.disconnect();
    }
  }, 20_000);

  it('discard removes a dead letter without running it', async () => {
    const { id } = await deadLetterOf();
    expect(await q.deadLetters.discard(id)).toBe(true);
    expect(await q.deadLetters.get(id)).toBeUndefined();
    expect((await q.deadLetters.list()).map((l) => l.eventId)).not.toContain(id);
    expect(await q.deadLetters.discard(id)).toBe(false);
    expect(await q.deadLetters.replay(id)).toBe(false);
    await sleep(200);
    expect(q.handlers.count('entered', id)).toBe(3);
  });

  it('keeps each account apart: a named account has its own dead letters', async () => {
    const { id } = await deadLetterOf('eu');
    expect(q.handlers.accounts.get(id)).toBe('eu');
    expect(await q.deadLetters.get(id, 'eu')).toMatchObject({ account: 'eu', eventId: id });
    expect(await q.deadLetters.get(id)).toBeUndefined();
    expect((await q.deadLetters.list({ account: 'eu' })).map((l) => l.eventId)).toEqual([id]);
    expect(q.listener!.received.find((l) => l.eventId === id)).toMatchObject({ account: 'eu' });
    q.handlers.failing.delete(id);
    expect(await q.deadLetters.replay(id)).toBe(false); // wrong account
    expect(await q.deadLetters.replay(id, 'eu')).toBe(true);
    await waitFor('the replayed event was handled', () => q.handlers.count('done', id) === 1);
  });

  it('lists newest first with offset and limit; unknown ids, bad arguments and accounts are refused clearly', async () => {
    const a = await deadLetterOf();
    const b = await deadLetterOf();
    const newest = await q.deadLetters.list({ limit: 2 });
    expect(newest.map((l) => l.eventId)).toEqual([b.id, a.id]);
    expect((await q.deadLetters.list({ offset: 1, limit: 1 })).map((l) => l.eventId)).toEqual([a.id]);
    expect(await q.deadLetters.get('evt_never_seen')).toBeUndefined();
    expect(await q.deadLetters.replay('evt_never_seen')).toBe(false);
    await expect(q.deadLetters.list({ limit: 0 })).rejects.toThrow(RangeError);
    await expect(q.deadLetters.list({ offset: -1 })).rejects.toThrow(RangeError);
    await expect(q.deadLetters.get('')).rejects.toThrow(TypeError);
    // ids the webhook route would refuse, as it does
    await expect(q.deadLetters.get('   ')).rejects.toThrow(TypeError);
    await expect(q.deadLetters.replay('\uD800')).rejects.toThrow(TypeError);
    // options that are no object, and an account of null, are refused as the other methods refuse them
    await expect(q.deadLetters.list(null as never)).rejects.toThrow('PaymentDeadLetterService.list: options must be an object');
    await expect(q.deadLetters.list({ account: null as never })).rejects.toThrow(PaymentConfigurationError);
    await expect(q.deadLetters.replay(a.id, null as never)).rejects.toThrow(PaymentConfigurationError);
    await expect(q.deadLetters.get(a.id, 'nope')).rejects.toThrow(PaymentConfigurationError);
    await expect(q.deadLetters.list({ account: 'nope' })).rejects.toThrow("no account 'nope' is registered by PaymentModule.forRoot() (queue-mode accounts: default, eu)");
    // the names an admin route can check first
    expect(q.deadLetters.accounts()).toEqual(['default', 'eu']);
  });

  it("pages over dead letters only: another producer's failed jobs in the queue are neither listed nor counted", async () => {
    const older = await deadLetterOf();
    const newer = await deadLetterOf();
    const foreign = new Queue('default', { connection: { url: redis.url }, prefix: 'payment-gateway:sandbox:_queue' });
    try {
      // more foreign failures than a page, all newer than the dead letters
      const jobs = await foreign.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'send-email', data: { to: `someone${i}@example.com` } })));
      await waitFor('the foreign jobs failed', async () => (await Promise.all(jobs.map((j) => foreign.getJobState(j.id!)))).every((s) => s === 'failed'));
      expect((await q.deadLetters.list({ limit: 1 })).map((l) => l.eventId)).toEqual([newer.id]);
      expect((await q.deadLetters.list({ offset: 1, limit: 1 })).map((l) => l.eventId)).toEqual([older.id]);
      expect((await q.deadLetters.list()).slice(0, 2).map((l) => l.eventId)).toEqual([newer.id, older.id]);
      await Promise.all(jobs.map((j) => j.remove()));
    } finally {
      await foreign.close();
    }
  });

  it('removes a dead letter past its retention; a new copy of its event then runs (it was a silent no-op)', async () => {
    // a second app with its own key prefix, so it has its own queue; the trim runs every second
    const short = await startQueueApp(redis.url, { payment: { redisKeyPrefix: 'short-retention:', queueDeadLetterRetentionMs: 1000 } });
    try {
      const { event, id } = await deadLetterOf('default', short);
      const letter = (await short.deadLetters.get(id))!;
      expect(letter.expiresAt.getTime() - letter.failedAt.getTime()).toBe(1000);
      // BullMQ itself trims failed jobs only when another job fails: none does here
      await waitFor('the trim removed it', async () => (await short.deadLetters.get(id)) === undefined, 10_000);
      expect((await short.deadLetters.list()).map((l) => l.eventId)).not.toContain(id);
      expect(await short.deadLetters.replay(id)).toBe(false);

      short.handlers.failing.delete(id);
      expect(await postWebhook(short.url, event)).toMatchObject({ status: 200, json: { queued: true } });
      await waitFor('the new copy ran', () => short.handlers.count('done', id) === 1, 10_000);
    } finally {
      await short.close();
    }
  });

  /** Posts an always-failing event to `app` and waits until it is a dead letter there. */
  async function deadLetterIn(app: QueueApp) {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    app.handlers.failing.add(id);
    expect(await postWebhook(app.url, event)).toMatchObject({ status: 200, json: { queued: true } });
    await waitFor(`${id} is a dead letter`, async () => (await app.deadLetters.get(id)) !== undefined);
    return { id, letter: (await app.deadLetters.get(id))! };
  }

  it('a dead letter keeps the retention it was queued with: an instance with a shorter one does not remove it early', async () => {
    const payment = { redisKeyPrefix: 'retention-lowered:' };
    const before = await startQueueApp(redis.url, { payment: { ...payment, queueDeadLetterRetentionMs: 3_600_000 } });
    const kept = await deadLetterIn(before);
    await before.close();
    // the next deploy lowered the retention to 1 s: its trim runs every second
    const after = await startQueueApp(redis.url, { payment: { ...payment, queueDeadLetterRetentionMs: 1000 } });
    try {
      const own = await deadLetterIn(after);
      expect(own.letter.expiresAt.getTime() - own.letter.failedAt.getTime()).toBe(1000);
      // its own 1 s retention, and every failed job older than that (BullMQ's removal by age would not spare them)
      await waitFor('the trim removed the new dead letter', async () => (await after.deadLetters.get(own.id)) === undefined, 5000);
      const letter = await after.deadLetters.get(kept.id);
      expect(letter?.expiresAt).toEqual(kept.letter.expiresAt);
      expect(letter!.expiresAt.getTime() - letter!.failedAt.getTime()).toBe(3_600_000);
      expect((await after.deadLetters.list()).map((l) => l.eventId)).toContain(kept.id);

      // a replay keeps it too: failed again, it is kept an hour from then
      after.handlers.failing.add(kept.id);
      expect(await after.deadLetters.replay(kept.id)).toBe(true);
      await waitFor('it failed again', () => after.handlers.count('entered', kept.id) === 3);
      await waitFor('it is a dead letter again', async () => (await after.deadLetters.get(kept.id)) !== undefined);
      const again = (await after.deadLetters.get(kept.id))!;
      expect(again.expiresAt.getTime() - again.failedAt.getTime()).toBe(3_600_000);
      expect(await after.deadLetters.discard(kept.id)).toBe(true);
    } finally {
      await after.close();
    }
  });

  it('a dead letter keeps the retention it was queued with: an instance with a longer one removes it once that passed', async () => {
    const payment = { redisKeyPrefix: 'retention-raised:' };
    const before = await startQueueApp(redis.url, { payment: { ...payment, queueDeadLetterRetentionMs: 1000 } });
    const { id, letter } = await deadLetterIn(before);
    await before.close();
    await sleep(Math.max(0, letter.expiresAt.getTime() - Date.now()) + 50);
    // the next deploy raised the retention to an hour: its trim at start-up removes the expired one
    const after = await startQueueApp(redis.url, { payment: { ...payment, queueDeadLetterRetentionMs: 3_600_000 } });
    try {
      await waitFor('the trim at start-up removed it', async () => (await after.deadLetters.get(id)) === undefined, 3000);
      expect(await after.deadLetters.list()).toEqual([]);
      expect(await after.deadLetters.replay(id)).toBe(false);
    } finally {
      await after.close();
    }
  });

  it('a replay or discard lock outlives five Redis time-outs where they are longer than its 30 s', async () => {
    const slow = await startQueueApp(redis.url, { payment: { redisKeyPrefix: 'slow-redis:', redisTimeoutMs: 20_000 } });
    const client = new Redis(redis.url);
    /** The lock's time to live, read while an action holds it. */
    const lockTtlIn = (app: QueueApp) => {
      const queue = app.app.get(PaymentAccountRegistry).requireQueue('default');
      return queue.withDeadLetterLock('evt_lock', () => client.pttl(`${queue.options.redisKeyPrefix}default:dead-letter-lock:evt_lock`));
    };
    try {
      // each of an action's commands may take up to redisTimeoutMs: a 30 s lock could lapse halfway
      expect(await lockTtlIn(slow)).toBeGreaterThan(95_000);
      expect(await lockTtlIn(q)).toBeLessThanOrEqual(30_000); // the default 2 s time-out
    } finally {
      client.disconnect();
      await slow.close();
    }
  });

  it('names the event emitted for a dead letter', () => {
    expect(PAYMENT_DEAD_LETTER_EVENT).toBe('payment-gateway.dead-letter');
  });
});
