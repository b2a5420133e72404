import 'reflect-metadata';
import { startQueueApp, type QueueApp } from '../support/queue-app.js';
import { FailoverEndpoint } from '../support/redis-failover-endpoint.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

describe('reliability: a Redis failover behind one endpoint', () => {
  let first: TestRedisServer;
  let second: TestRedisServer;
  let endpoint: FailoverEndpoint;
  let w: WebhookApp | undefined;

  beforeEach(async () => {
    [first, second] = await Promise.all([startRedisServer(), startRedisServer()]);
    endpoint = new FailoverEndpoint(first, second);
    await endpoint.start();
  });
  afterEach(async () => {
    await w?.close();
    w = undefined;
    await endpoint.stop();
    await Promise.all([first.stop(), second.stop()]);
  });

  /** Deliveries of new events, one every 200 ms, until one is answered `expected`; the statuses seen. */
  async function deliverUntil(expected: Record<string, unknown>, timeoutMs = 10_000): Promise<{ statuses: number[]; eventId?: string }> {
    const statuses: number[] = [];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const event = envelope();
      const answer = await postWebhook(w!.url, event);
      statuses.push(answer.status);
      if (JSON.stringify(answer.json) === JSON.stringify(expected)) return { statuses, eventId: event.eventId as string };
      await sleep(200);
    }
    return { statuses };
  }

  it('inline mode, Redis store: the connection to the demoted primary is replaced, deliveries are handled again within a second or two', async () => {
    w = await startWebhookApp({ adapter: 'express', payment: { redisUrl: endpoint.url } });
    expect((await postWebhook(w.url, envelope())).json).toEqual({ received: true });
    await endpoint.failOver();
    const { statuses, eventId } = await deliverUntil({ received: true });
    // before: 503 READONLY for every delivery until the app restarted
    expect(eventId).toBeDefined();
    expect(statuses.length).toBeLessThanOrEqual(5);
    expect(w.handlers.count('payment.*', eventId)).toBe(1);
  });

  it('queue mode: the route queues on the new primary and the worker runs the event there', async () => {
    w = await startWebhookApp({ adapter: 'express', payment: { processing: 'queue', queueRedisUrl: endpoint.url, queueBackoffMs: 100 } });
    const before = envelope();
    expect((await postWebhook(w.url, before)).json).toEqual({ received: true, queued: true });
    await waitFor('the worker ran the event queued before the failover', () => w!.handlers.count('payment.*', before.eventId as string) === 1);
    await endpoint.failOver();
    const { statuses, eventId } = await deliverUntil({ received: true, queued: true });
    expect(eventId).toBeDefined();
    expect(statuses.length).toBeLessThanOrEqual(5);
    // the worker's own connections (its blocking wait for jobs included) reach the new primary too
    await waitFor('the worker ran the event queued after the failover', () => w!.handlers.count('payment.*', eventId) === 1, 15_000);
  });

  it('queue mode: replay and discard right after the failover fail as PaymentQueueUnavailableError (an admin route answers 503), never with ioredis\' own error, then work', async () => {
    let q: QueueApp | undefined;
    try {
      q = await startQueueApp(endpoint.url, { eventEmitter: true, payment: { queueAttempts: 1 } });
      const events = [envelope('payment.succeeded'), envelope('payment.succeeded')];
      for (const event of events) q.handlers.failing.add(event.eventId as string);
      for (const event of events) expect((await postWebhook(q.url, event)).json).toEqual({ received: true, queued: true });
      await waitFor('two dead letters', async () => (await q!.deadLetters.list()).length === 2);
      await endpoint.failOver();
      const first = [
        await q.deadLetters.replay(events[0]!.eventId as string).catch((error: Error) => error),
        await q.deadLetters.discard(events[1]!.eventId as string).catch((error: Error) => error),
      ];
      for (const outcome of first) {
        if (outcome instanceof Error) expect(outcome).toMatchObject({ name: 'PaymentQueueUnavailableError', code: 'QUEUE_UNAVAILABLE' });
      }
      // once the connection reached the new primary, both act
      q.handlers.failing.clear();
      await waitFor('the replay went through', async () => (await q!.deadLetters.replay(events[0]!.eventId as string).catch(() => false)) || q!.handlers.count('done', events[0]!.eventId as string) === 1);
      await waitFor('the replayed event ran', () => q!.handlers.count('done', events[0]!.eventId as string) === 1);
      await waitFor('the discard went through', async () => (await q!.deadLetters.get(events[1]!.eventId as string).catch(() => 'unavailable')) === undefined || (await q!.deadLetters.discard(events[1]!.eventId as string).catch(() => false)));
      expect(await q.deadLetters.get(events[1]!.eventId as string)).toBeUndefined();
    } finally {
      await q?.close();
    }
  });

  it('queue mode: a handler that succeeds across the failover completes its job, not a dead letter (the refused write is sent again)', async () => {
    let q: QueueApp | undefined;
    try {
      // its only attempt, with the default lock (renewed every 15 s): the completion is the worker's first write after the failover
      q = await startQueueApp(endpoint.url, { eventEmitter: true, payment: { queueAttempts: 1, queueLockDurationMs: 30_000, webhookLeaseMs: 60_000 } });
      const event = envelope('payment.succeeded');
      const eventId = event.eventId as string;
      const release = q.handlers.hold(eventId);
      expect((await postWebhook(q.url, event)).json).toEqual({ received: true, queued: true });
      await waitFor('the handler started', () => q!.handlers.count('entered', eventId) === 1);
      await endpoint.failOver();
      await sleep(500);
      release();
      await waitFor('the handler finished', () => q!.handlers.count('done', eventId) === 1);
      // before: BullMQ's move to completed, refused READONLY, failed the attempt: a dead letter and its alert
      // (the route's own connection may still be reconnecting: a 503 or an unavailable queue is asked again)
      await waitFor('a copy is answered duplicate', async () => (await postWebhook(q!.url, event)).json?.duplicate === true);
      await sleep(500);
      expect(q.listener!.received).toEqual([]);
      expect(await q.deadLetters.get(eventId)).toBeUndefined();
      expect(q.handlers.count('done', eventId)).toBe(1);
    } finally {
      await q?.close();
    }
  });
});
