import 'reflect-metadata';
import Redis from 'ioredis';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import type { WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';
import { webhookEventKey } from '../../lib/webhooks/webhook-store-keys.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, sleep, startQueueApp } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// What one queue-mode delivery costs Redis, as Redis' MONITOR sees it, on a web-only instance.
// Where the store is the module's own on the queue's connection (the default), the job-state read
// checks the processed mark too: a delivery costs that read and BullMQ's add, sent together, not a
// third command first (the acknowledgement rate of `npm run bench` pays per command).
describe.each([
  // the job-state read is an EVAL, BullMQ's add an EVALSHA, the store's own read a GET
  // (a copy of a processed event: its add went beside the read; the worker's claim drops that job)
  ["the module's store, on the queue's connection", false, ['eval', 'evalsha'], ['eval', 'evalsha']],
  ['a Redis store with a connection of its own', true, ['eval', 'evalsha', 'get'], ['get']],
])('queue-mode route with %s: Redis commands per delivery', (_, ownStore, newEventCommands, processedCommands) => {
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
    q = await startQueueApp(redis.url, { payment: { queueWorker: false, ...(passedStore ? { store: passedStore } : {}) } });
    // BullMQ loads its scripts on first use, and the trim runs at bootstrap: neither is a delivery's
    await postWebhook(q.url, envelope('payment.succeeded'));
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
    const store: WebhookEventStore = q.app.get(PaymentAccountRegistry).require('default').store!;
    const key = webhookEventKey('default', event.eventId as string);
    const claim = await store.claim(key, 60_000);
    if (claim.outcome !== 'claimed') throw new Error(`claim: ${claim.outcome}`);
    await store.complete(key, claim.claimToken, 60_000);
    let answer: unknown;
    const calls = await commandsOf(async () => (answer = await postWebhook(q.url, event)));
    expect(answer).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(calls.sort()).toEqual(processedCommands);
  });
});
