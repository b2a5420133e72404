import 'reflect-metadata';
import { Logger, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import { PAYMENT_ACCOUNT_OPTIONS } from '../../lib/payment.constants.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { WebhookStoreUnavailableError } from '../../lib/stores/webhook-event-store.errors.js';
import { WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';
import { createWebhookEventStore, createWebhookEventStoreProviders } from '../../lib/stores/webhook-event-store.providers.js';
import { getPaymentGatewayToken, getPaymentOptionsToken, getWebhookEventStoreToken } from '../../lib/accounts/payment-account.tokens.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import { PaymentModule } from '../../lib/payment.module.js';
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

describe('a host store given through forRootAsync()', () => {
  const APP_WEBHOOK_STORE = 'APP_WEBHOOK_STORE';
  const hostStore = new MemoryWebhookEventStore();
  @Module({
    providers: [{ provide: APP_WEBHOOK_STORE, useValue: hostStore }, { provide: WebhookEventStore, useValue: hostStore }],
    exports: [APP_WEBHOOK_STORE, WebhookEventStore],
  })
  class StoreModule {}
  const useFactory = (store: WebhookEventStore) => ({ baseUrl: 'https://pay.example.com', store });

  function refusal(build: () => unknown): PaymentConfigurationError {
    try {
      build();
    } catch (error) {
      if (error instanceof PaymentConfigurationError) return error;
      throw error;
    }
    throw new Error('expected a PaymentConfigurationError');
  }

  it("is refused at forRootAsync() under the account's own store token (before: a boot crash, 'Cannot convert a Symbol value to a string')", () => {
    for (const inject of [[WebhookEventStore], [{ token: WebhookEventStore, optional: true }]]) {
      const error = refusal(() => PaymentModule.forRootAsync({ imports: [StoreModule], inject, useFactory, readEnv: false }));
      expect(error.account).toBe('default');
      expect(error.problems).toEqual([
        "forRootAsync() inject lists WebhookEventStore, the token under which this module provides the account's webhook event store, " +
          "built from what the factory returns (a cycle): provide your store under a token of your own ({ provide: 'APP_WEBHOOK_STORE', useFactory: ... }), " +
          "inject that and return it as 'store'",
      ]);
    }
    // a named account's own store token likewise
    const eu = refusal(() => PaymentModule.forRootAsync({ account: 'eu', inject: [getWebhookEventStoreToken('eu')], useFactory }));
    expect(eu.account).toBe('eu');
    expect(eu.problems).toEqual([expect.stringMatching(/^forRootAsync\(\) inject lists 'nestjs-payment-gateway:eu:WebhookEventStore', the token under which/)]);
  });

  it("refuses the account's client and options tokens too: both are built from what the factory returns", () => {
    const error = refusal(() => PaymentModule.forRootAsync({ inject: [PaymentGatewayService, getPaymentOptionsToken()], useFactory: () => ({}) }));
    expect(error.problems).toEqual([
      expect.stringMatching(/^forRootAsync\(\) inject lists PaymentGatewayService, .* the account's PaymentGatewayService, .*: inject what it is built from instead$/),
      expect.stringMatching(/^forRootAsync\(\) inject lists 'nestjs-payment-gateway:default:options', .* the account's resolved options, /),
    ]);
    expect(refusal(() => PaymentModule.forRootAsync({ account: 'eu', inject: [getPaymentGatewayToken('eu')], useFactory: () => ({}) })).account).toBe('eu');
  });

  it("works under a token of the host's own, and another account's tokens stay injectable", async () => {
    const ref = await Test.createTestingModule({
      imports: [
        PaymentModule.forRootAsync({ imports: [StoreModule], inject: [APP_WEBHOOK_STORE], useFactory, readEnv: false }),
        // the WebhookEventStore symbol is the default account's, not this one's: no cycle
        PaymentModule.forRootAsync({ account: 'eu', imports: [StoreModule], inject: [WebhookEventStore], useFactory, readEnv: false }),
      ],
    }).compile();
    try {
      expect(ref.get(WebhookEventStore)).toBe(hostStore);
      expect(ref.get(getWebhookEventStoreToken('eu'))).toBe(hostStore);
    } finally {
      await ref.close();
    }
  });
});
