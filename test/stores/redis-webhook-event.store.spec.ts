import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer, Socket } from 'node:net';
import { loadRedisConstructor } from '../../lib/stores/redis-client.js';
import { DEFAULT_REDIS_KEY_PREFIX, RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { RedisClientMissingError, WebhookStoreUnavailableError } from '../../lib/stores/webhook-event-store.errors.js';
import type { WebhookClaimResult } from '../../lib/stores/webhook-event-store.interface.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const LEASE_MS = 60_000;

describe('RedisWebhookEventStore', () => {
  let server: TestRedisServer;
  const toClose: { close(): Promise<void> }[] = [];
  const track = <T extends { close(): Promise<void> }>(closable: T): T => {
    toClose.push(closable);
    return closable;
  };
  const newStore = (options?: ConstructorParameters<typeof RedisWebhookEventStore>[1]) =>
    track(new RedisWebhookEventStore(server.url, options));

  beforeAll(async () => {
    Logger.overrideLogger(false);
    server = await startRedisServer();
  });
  afterEach(async () => {
    await Promise.all(toClose.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await server?.stop();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });

  it('grants exactly one claim when two instances race 50 concurrent claims each', async () => {
    const prefix = `race:${randomUUID()}:`;
    const a = newStore({ keyPrefix: prefix });
    const b = newStore({ keyPrefix: prefix });
    for (const key of ['evt_1', 'evt_2', 'evt_3']) {
      const attempts: Promise<WebhookClaimResult>[] = [];
      for (let i = 0; i < 50; i++) attempts.push(a.claim(key, LEASE_MS), b.claim(key, LEASE_MS));
      const results = await Promise.all(attempts);
      expect(results.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.outcome === 'in-flight')).toHaveLength(99);
    }
  });

  it('checks the owner on release and complete across instances', async () => {
    const prefix = `owner:${randomUUID()}:`;
    const a = newStore({ keyPrefix: prefix });
    const b = newStore({ keyPrefix: prefix });
    const claim = await a.claim('evt_1', LEASE_MS);
    if (claim.outcome !== 'claimed') throw new Error('setup');

    await b.release('evt_1', randomUUID());
    await b.complete('evt_1', randomUUID(), LEASE_MS);
    await expect(b.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });

    await a.release('evt_1', claim.claimToken);
    const second = await b.claim('evt_1', LEASE_MS);
    expect(second).toMatchObject({ outcome: 'claimed' });
    if (second.outcome !== 'claimed') throw new Error('unreachable');
    await b.complete('evt_1', second.claimToken, LEASE_MS);
    await expect(a.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it("a claim whose reply was lost with its connection is still its owner's when ioredis sends it again", async () => {
    // a proxy that lets the next claim reach Redis, then cuts the connection before its reply
    let armed = false;
    const proxy = createServer((client: Socket) => {
      const upstream = new Socket().connect(server.port, '127.0.0.1');
      let cut = false;
      client.on('data', (chunk) => {
        if (armed && chunk.includes('NX')) [armed, cut] = [false, true];
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => (cut ? (client.destroy(), upstream.destroy()) : client.write(chunk)));
      for (const socket of [client, upstream]) socket.on('error', () => undefined);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const store = track(new RedisWebhookEventStore(`redis://127.0.0.1:${(proxy.address() as AddressInfo).port}`, { operationTimeoutMs: 5000 }));
      await store.ping();
      armed = true;
      const key = `default:event:${randomUUID()}`;
      // was 'in-flight' (a 409 to the delivery that holds it), the key locked by nobody for the whole lease
      const claim = await store.claim(key, LEASE_MS);
      expect(claim.outcome).toBe('claimed');
      await store.complete(key, (claim as { claimToken: string }).claimToken, LEASE_MS);
      await expect(store.isProcessed(key)).resolves.toBe(true);
    } finally {
      proxy.close();
    }
  });

  it('writes prefixed keys: the claim token with the lease, then "processed" with the retention', async () => {
    const raw = track({ client: new Redis(server.url), close: async () => void (await raw.client.quit()) });
    const store = newStore();
    expect(store.keyPrefix).toBe(DEFAULT_REDIS_KEY_PREFIX);
    const key = `evt_${randomUUID()}`;
    const claim = await store.claim(key, LEASE_MS);
    if (claim.outcome !== 'claimed') throw new Error('setup');
    await expect(raw.client.get(DEFAULT_REDIS_KEY_PREFIX + key)).resolves.toBe(claim.claimToken);
    const leaseLeft = await raw.client.pttl(DEFAULT_REDIS_KEY_PREFIX + key);
    expect(leaseLeft).toBeGreaterThan(0);
    expect(leaseLeft).toBeLessThanOrEqual(LEASE_MS);

    const retentionMs = 7 * 24 * 60 * 60 * 1000;
    await store.complete(key, claim.claimToken, retentionMs);
    await expect(raw.client.get(DEFAULT_REDIS_KEY_PREFIX + key)).resolves.toBe('processed');
    const retentionLeft = await raw.client.pttl(DEFAULT_REDIS_KEY_PREFIX + key);
    expect(retentionLeft).toBeGreaterThan(LEASE_MS);
    expect(retentionLeft).toBeLessThanOrEqual(retentionMs);
  });

  it.each([
    ['an ioredis client (plain GET)', (client: Redis) => client],
    // a client with only what RedisClientLike requires: the read goes through eval
    ['a client with eval only', (client: Redis) => ({
      get status() { return client.status; },
      eval: client.eval.bind(client),
      quit: client.quit.bind(client),
      disconnect: client.disconnect.bind(client),
      once: client.once.bind(client),
      on: client.on.bind(client),
      removeListener: client.removeListener.bind(client),
    })],
  ])('isProcessed() through %s: false for a free key and a held claim, true once completed, and never claims', async (_, wrap) => {
    const raw = new Redis(server.url);
    track({ close: async () => void (await raw.quit()) });
    const store = track(new RedisWebhookEventStore(wrap(raw), { keyPrefix: `read:${randomUUID()}:` }));
    await expect(store.isProcessed('evt_free')).resolves.toBe(false);
    await expect(store.isProcessed('evt_free')).resolves.toBe(false);
    const claim = await store.claim('evt_free', LEASE_MS);
    if (claim.outcome !== 'claimed') throw new Error('the read claimed the key');
    await expect(store.isProcessed('evt_free')).resolves.toBe(false);
    await store.complete('evt_free', claim.claimToken, LEASE_MS);
    await expect(store.isProcessed('evt_free')).resolves.toBe(true);
  });

  it('uses a client it was given and leaves it open on close', async () => {
    const client = new Redis(server.url, { enableOfflineQueue: false });
    track({ close: async () => void (await client.quit()) });
    const store = new RedisWebhookEventStore(client, { keyPrefix: `given:${randomUUID()}:` });
    await expect(store.claim('evt_1', LEASE_MS)).resolves.toMatchObject({ outcome: 'claimed' });
    await store.close();
    expect(client.status).toBe('ready');
    await expect(client.ping()).resolves.toBe('PONG');
    await expect(store.claim('evt_2', LEASE_MS)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);
  });

  it('rejects every call once closed, and closes twice without error', async () => {
    const store = newStore();
    await store.claim('evt_1', LEASE_MS);
    await store.close();
    await store.close();
    await expect(store.claim('evt_1', LEASE_MS)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);
  });

  it('never shows the password of its URL in errors or JSON', async () => {
    // nothing listens on port 1: the first connection fails
    const store = track(new RedisWebhookEventStore('redis://:s3cret-pw@127.0.0.1:1', { operationTimeoutMs: 300 }));
    const error = await store.claim('evt_1', LEASE_MS).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebhookStoreUnavailableError);
    expect(String((error as Error).message)).not.toContain('s3cret-pw');
    expect(JSON.stringify(store)).not.toContain('s3cret-pw');
    expect(JSON.stringify(store)).toContain('"store":"redis"');
  });

  describe('while the first connection is made', () => {
    it('fails at the first refused attempt, not after the whole time-out, with the reason', async () => {
      const store = track(new RedisWebhookEventStore('redis://127.0.0.1:1', { operationTimeoutMs: 10_000 }));
      const started = Date.now();
      const error = await store.claim('evt_1', LEASE_MS).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WebhookStoreUnavailableError);
      expect((error as Error).message).toMatch(/^Redis unavailable: .*ECONNREFUSED/);
      expect(Date.now() - started).toBeLessThan(5_000);
    });

    it('gives up after its time-out when Redis accepts the socket but never answers', async () => {
      // a listener that takes connections and stays silent: ioredis waits for its ready check
      const sockets = new Set<Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket.on('error', () => undefined));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as AddressInfo;
      try {
        const store = track(new RedisWebhookEventStore(`redis://127.0.0.1:${port}`, { operationTimeoutMs: 300 }));
        // two calls before the connection share one wait and fail the same way
        const errors = await Promise.all([store.claim('evt_1', LEASE_MS), store.claim('evt_2', LEASE_MS)].map((p) => p.catch((e: unknown) => e)));
        for (const error of errors) {
          expect(error).toBeInstanceOf(WebhookStoreUnavailableError);
          expect((error as Error).message).toBe('Redis not ready after 300 ms');
        }
      } finally {
        await Promise.all(toClose.splice(0).map((c) => c.close()));
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });

    it('fails when the client it was given is closed while connecting', async () => {
      const client = new Redis(server.url, { lazyConnect: true, enableOfflineQueue: false });
      const store = track(new RedisWebhookEventStore(client, { operationTimeoutMs: 5_000 }));
      const pending = store.claim('evt_1', LEASE_MS).catch((e: unknown) => e);
      client.disconnect();
      const error = await pending;
      expect(error).toBeInstanceOf(WebhookStoreUnavailableError);
      expect((error as Error).message).toMatch(/^Redis (connection ended|is not connected)/);
    });
  });

  it('rejects a missing connection argument and reports a missing ioredis with a named error', () => {
    expect(() => new RedisWebhookEventStore('')).toThrow(TypeError);
    expect(() => new RedisWebhookEventStore({} as never)).toThrow(TypeError);
    expect(() => loadRedisConstructor('ioredis-package-that-is-not-installed')).toThrow(RedisClientMissingError);
    expect(() => loadRedisConstructor('ioredis-package-that-is-not-installed')).toThrow(/npm i ioredis/);
    expect(loadRedisConstructor()).toBe(Redis);
  });

  describe('when Redis goes away', () => {
    it('a store made on a client whose other stores all closed during an outage still logs that outage', async () => {
      const logs = new CollectingLogger();
      Logger.overrideLogger(logs);
      const client = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
      client.on('error', () => undefined);
      const outages = () => logs.lines.filter((l) => l.context === 'RedisWebhookEventStore' && l.message.startsWith('Redis unavailable'));
      try {
        const first = new RedisWebhookEventStore(client);
        await first.claim(`evt_${randomUUID()}`, LEASE_MS);
        await server.stop();
        await waitFor('the outage was logged', () => outages().length === 1);
        await first.close();
        const second = new RedisWebhookEventStore(client);
        await waitFor('the outage was logged again, by the store now using the client', () => outages().length === 2);
        await second.close();
      } finally {
        Logger.overrideLogger(false);
        await server.restart();
        // closed once it reconnected: a client disconnected mid-reconnect can leave the worker a socket
        await waitFor('the client reconnected', () => client.status === 'ready');
        await client.quit();
      }
    });

    it('rejects with WebhookStoreUnavailableError, then works again once Redis is back', async () => {
      const store = newStore({ keyPrefix: `outage:${randomUUID()}:` });
      const held = await store.claim('evt_held', LEASE_MS);
      if (held.outcome !== 'claimed') throw new Error('setup');

      await server.stop();
      await expect(store.claim('evt_1', LEASE_MS)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);
      await expect(store.complete('evt_held', held.claimToken, LEASE_MS)).rejects.toBeInstanceOf(
        WebhookStoreUnavailableError,
      );
      await expect(store.release('evt_held', held.claimToken)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);
      // a store created during the outage fails the same way
      const late = newStore({ operationTimeoutMs: 300 });
      await expect(late.claim('evt_1', LEASE_MS)).rejects.toBeInstanceOf(WebhookStoreUnavailableError);

      await server.restart();
      const deadline = Date.now() + 20_000;
      let result: WebhookClaimResult | undefined;
      while (!result && Date.now() < deadline) {
        result = await store.claim('evt_1', LEASE_MS).catch(async (error: unknown) => {
          expect(error).toBeInstanceOf(WebhookStoreUnavailableError);
          await new Promise((resolve) => setTimeout(resolve, 100));
          return undefined;
        });
      }
      expect(result).toMatchObject({ outcome: 'claimed' });
      await expect(store.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    });
  });
});
