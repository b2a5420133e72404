import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import { PAYMENT_ACCOUNT_OPTIONS } from '../../lib/payment.constants.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { WebhookStoreUnavailableError } from '../../lib/stores/webhook-event-store.errors.js';
import { WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';
import { createWebhookEventStore, createWebhookEventStoreProviders } from '../../lib/stores/webhook-event-store.providers.js';
import { getWebhookEventStoreToken } from '../../lib/accounts/payment-account.tokens.js';
import { unusedLoopbackPort } from '../support/loopback-port.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

// Only the store-related fields matter here.
function options(overrides: Partial<ResolvedPaymentOptions>): ResolvedPaymentOptions {
  return { memoryStoreMaxEntries: 100_000, ...overrides } as ResolvedPaymentOptions;
}

async function compile(resolved: ResolvedPaymentOptions) {
  const moduleRef = await Test.createTestingModule({
    providers: [{ provide: PAYMENT_ACCOUNT_OPTIONS, useValue: resolved }, ...createWebhookEventStoreProviders('default')],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('webhook event store providers', () => {
  let server: TestRedisServer;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  it("provides the default account's store under the WebhookEventStore token, a named account's under its own", () => {
    expect(createWebhookEventStoreProviders('default')[0]).toMatchObject({ provide: WebhookEventStore });
    expect(createWebhookEventStoreProviders('eu')[0]).toMatchObject({ provide: getWebhookEventStoreToken('eu') });
    expect(getWebhookEventStoreToken('eu')).not.toBe(WebhookEventStore);
  });

  it('defaults to a memory store bounded by memoryStoreMaxEntries', async () => {
    const moduleRef = await compile(options({ memoryStoreMaxEntries: 1234 }));
    const store = moduleRef.get<MemoryWebhookEventStore>(WebhookEventStore);
    expect(store).toBeInstanceOf(MemoryWebhookEventStore);
    expect(store.maxEntries).toBe(1234);
    await moduleRef.close();
  });

  it('uses Redis when redisUrl is set, and quits that connection on shutdown', async () => {
    const moduleRef = await compile(options({ redisUrl: server.url }));
    const store = moduleRef.get<RedisWebhookEventStore>(WebhookEventStore);
    expect(store).toBeInstanceOf(RedisWebhookEventStore);
    await expect(store.claim('evt_provider', 60_000)).resolves.toMatchObject({ outcome: 'claimed' });
    await moduleRef.close();
    await expect(store.claim('evt_other', 60_000)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);
  });

  it('closes at once while Redis is down: no timer of the dead socket keeps the process alive', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timers();
    const moduleRef = await compile(options({ redisUrl: `redis://127.0.0.1:${await unusedLoopbackPort()}` }));
    const store = moduleRef.get<RedisWebhookEventStore>(WebhookEventStore);
    await expect(store.claim('evt_down', 60_000)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);
    // the client now waits to reconnect, its last socket dead
    while (store.toJSON().status !== 'reconnecting') await new Promise((resolve) => setTimeout(resolve, 10));
    await moduleRef.close();
    // ioredis's default keeps a 2 s timer for a socket that already died; ours is short
    const deadline = Date.now() + 1000;
    while (timers() > before && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('prefers a given store over redisUrl, and leaves it open on shutdown', async () => {
    const given = new MemoryWebhookEventStore({ maxEntries: 5 });
    const moduleRef = await compile(options({ store: given, redisUrl: server.url }));
    expect(moduleRef.get(WebhookEventStore)).toBe(given);
    await given.claim('evt_kept', 60_000);
    await moduleRef.close();
    // close() would have emptied it
    expect(given.size).toBe(1);
  });

  it('creates a new store per module instance', () => {
    const resolved = options({});
    expect(createWebhookEventStore(resolved)).not.toBe(createWebhookEventStore(resolved));
  });
});
