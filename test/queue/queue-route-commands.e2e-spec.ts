import 'reflect-metadata';
import Redis from 'ioredis';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { markProcessed, type QueueApp, sleep, startQueueApp } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// What one queue-mode delivery costs Redis, as Redis' MONITOR sees it, on a web-only instance.
// Where the store is the module's own on the queue's connection (the default), the job-state read
// checks the processed mark too, and runs first: a new event costs that read and BullMQ's add, not a
// third command (the acknowledgement rate of `npm run bench` pays per command), a processed copy one.
describe.each<[string, boolean, string[], string[], PaymentModuleOptions?]>([
  // the job-state read is an EVAL, BullMQ's add an EVALSHA, the store's own read a GET
  ["the module's store, on the queue's connection", false, ['eval', 'evalsha'], ['eval']],
  ['a Redis store with a connection of its own', true, ['eval', 'evalsha', 'get'], ['get']],
  // one attempt: a new event's job is read again once added (which copy queued it decides the answer)
  ["the module's store and queueAttempts: 1", false, ['eval', 'eval', 'evalsha'], ['eval'], { queueAttempts: 1 }],
])('queue-mode route with %s: Redis commands per delivery', (_, ownStore, newEventCommands, processedCommands, payment: PaymentModuleOptions = {}) => {
  let redis: TestRedisServer;
  let q: QueueApp;
  let admin: Redis;
  let passedStore: RedisWebhookEventStore | undefined;

  /** The commands clients sent Redis while `deliver` ran, by name (a script's own calls left out), as MONITOR shows them. */
  async function commandsOf(deliver: () => Promise<unknown>): Promise<string[]> {
    const monitor = await admin.monitor();
    try {
      const seen: string[] = [];
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source !== 'lua') seen.push(String(args[0]).toLowerCase());
      });
      await deliver();
      await sleep(200); // MONITOR reports after the command ran
      return seen;
    } finally {
      monitor.disconnect();
    }
  }
  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
    passedStore = ownStore ? new RedisWebhookEventStore(redis.url) : undefined;
    q = await startQueueApp(redis.url, { payment: { ...payment, queueWorker: false, ...(passedStore ? { store: passedStore } : {}) } });
    // BullMQ loads its scripts on first use, and the trim runs at bootstrap: neither is a delivery's
    await postWebhook(q.url, envelope('payment.succeeded'));
    const processed = envelope('payment.succeeded');
    await markProcessed(q.app, processed.eventId as string);
    await postWebhook(q.url, processed);
    await sleep(200);
  });
  afterAll(async () => {
    await q?.close();
    await passedStore?.close();
    admin?.disconnect();
    await redis?.stop();
  });

  it(`a new event: ${newEventCommands.join(' + ')}, and it is queued`, async () => {
    let answer: unknown;
    const calls = await commandsOf(async () => (answer = await postWebhook(q.url, envelope('payment.succeeded'))));
    expect(answer).toMatchObject({ status: 200, json: { received: true, queued: true } });
    expect(calls.sort()).toEqual(newEventCommands);
  });

  it(`a copy of an event the store marks processed: ${processedCommands.join(' + ')}, answered duplicate`, async () => {
    const event = envelope('payment.succeeded');
    await markProcessed(q.app, event.eventId as string);
    let answer: unknown;
    const calls = await commandsOf(async () => (answer = await postWebhook(q.url, event)));
    expect(answer).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(calls.sort()).toEqual(processedCommands);
  });
});
