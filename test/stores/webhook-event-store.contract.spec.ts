// One set of semantics, checked against every store (spec 6.2: each event is
// acted on once, whatever the retries and duplicates).
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import type { WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

interface Harness {
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** A fresh, empty store. */
  create(): WebhookEventStore;
  /** Lets `ms` pass for the store (fake clock for memory, real time for Redis). */
  passTime(ms: number): Promise<void>;
}

const SHORT_MS = 100;
const LONG_MS = 60_000;

function memoryHarness(): Harness {
  let clock = 1_700_000_000_000;
  return {
    setup: async () => undefined,
    teardown: async () => undefined,
    create: () => new MemoryWebhookEventStore({ now: () => clock }),
    passTime: async (ms) => {
      clock += ms;
    },
  };
}

function redisHarness(): Harness {
  let server: TestRedisServer | undefined;
  const stores: RedisWebhookEventStore[] = [];
  return {
    setup: async () => {
      server = await startRedisServer();
    },
    teardown: async () => {
      await Promise.all(stores.map((s) => s.close()));
      await server?.stop();
    },
    create: () => {
      // own prefix per store: tests never see each other's keys
      const store = new RedisWebhookEventStore(server!.url, { keyPrefix: `contract:${randomUUID()}:` });
      stores.push(store);
      return store;
    },
    // Redis expires keys on its own clock; waiting longer than asked only makes it surer
    passTime: (ms) => new Promise((resolve) => setTimeout(resolve, ms + 50)),
  };
}

describe.each([
  ['MemoryWebhookEventStore', memoryHarness],
  ['RedisWebhookEventStore', redisHarness],
])('%s (store contract)', (_name, makeHarness) => {
  const harness = makeHarness();
  let store: WebhookEventStore;

  beforeAll(async () => {
    Logger.overrideLogger(false);
    await harness.setup();
  });
  afterAll(async () => {
    await harness.teardown();
    Logger.overrideLogger(['log', 'error', 'warn']);
  });
  beforeEach(() => {
    store = harness.create();
  });

  const claimToken = async (key: string, leaseMs = LONG_MS): Promise<string> => {
    const result = await store.claim(key, leaseMs);
    if (result.outcome !== 'claimed') throw new Error(`expected a claim of ${key}, got ${result.outcome}`);
    return result.claimToken;
  };

  it('grants the first claim with a token, then reports the event in flight', async () => {
    const first = await store.claim('evt_1', LONG_MS);
    expect(first).toEqual({ outcome: 'claimed', claimToken: expect.any(String) });
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'in-flight' });
  });

  it('keeps keys independent', async () => {
    await claimToken('evt_a');
    await expect(store.claim('evt_b', LONG_MS)).resolves.toMatchObject({ outcome: 'claimed' });
  });

  it('reports a completed event as processed', async () => {
    const token = await claimToken('evt_1');
    await store.complete('evt_1', token, LONG_MS);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('lets the next delivery claim a released event, with a new token', async () => {
    const token = await claimToken('evt_1');
    await store.release('evt_1', token);
    const again = await claimToken('evt_1');
    expect(again).not.toBe(token);
  });

  it('lets another delivery take over once the lease has expired', async () => {
    await claimToken('evt_1', SHORT_MS);
    await harness.passTime(SHORT_MS * 2);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toMatchObject({ outcome: 'claimed' });
  });

  it('renews a live claim for its owner only, so a slow handler keeps its event', async () => {
    const token = await claimToken('evt_1', SHORT_MS * 3);
    await harness.passTime(SHORT_MS * 2);
    await expect(store.extend!('evt_1', token, SHORT_MS * 3)).resolves.toBe(true);
    await harness.passTime(SHORT_MS * 2); // past the first lease, inside the renewed one
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'in-flight' });
    await expect(store.extend!('evt_1', 'not-the-owner', LONG_MS)).resolves.toBe(false);
    await store.complete('evt_1', token, LONG_MS);
    await expect(store.extend!('evt_1', token, LONG_MS)).resolves.toBe(false); // processed: nothing to renew
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('does not renew a claim that expired and was taken over', async () => {
    const stale = await claimToken('evt_1', SHORT_MS);
    await harness.passTime(SHORT_MS * 2);
    await claimToken('evt_1');
    await expect(store.extend!('evt_1', stale, LONG_MS)).resolves.toBe(false);
  });

  it('takes a free key back for the owner whose lease lapsed (a pause, a restart that lost it): copies get in-flight again', async () => {
    const token = await claimToken('evt_1', SHORT_MS);
    await harness.passTime(SHORT_MS * 2); // lapsed, and nobody claimed it
    await expect(store.extend!('evt_1', token, LONG_MS)).resolves.toBe(true);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'in-flight' });
    await store.complete('evt_1', token, LONG_MS);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('ignores release and complete with a stale token once another delivery holds the claim', async () => {
    const stale = await claimToken('evt_1', SHORT_MS);
    await harness.passTime(SHORT_MS * 2);
    const current = await claimToken('evt_1');

    await store.release('evt_1', stale);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'in-flight' });
    await store.complete('evt_1', stale, LONG_MS);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'in-flight' });

    await store.complete('evt_1', current, LONG_MS);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('ignores a token that never owned the key', async () => {
    await claimToken('evt_1');
    await store.release('evt_1', 'not-a-token');
    await store.complete('evt_1', 'not-a-token', LONG_MS);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'in-flight' });
  });

  it('does not undo a processed event with a late release', async () => {
    const token = await claimToken('evt_1');
    await store.complete('evt_1', token, LONG_MS);
    await store.release('evt_1', token);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('records completion when the lease ran out but nobody took over (handlers did run)', async () => {
    const token = await claimToken('evt_1', SHORT_MS);
    await harness.passTime(SHORT_MS * 2);
    await store.complete('evt_1', token, LONG_MS);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('forgets a processed event after its retention', async () => {
    const token = await claimToken('evt_1');
    await store.complete('evt_1', token, SHORT_MS);
    await harness.passTime(SHORT_MS * 2);
    await expect(store.claim('evt_1', LONG_MS)).resolves.toMatchObject({ outcome: 'claimed' });
  });

  it('grants exactly one of 50 concurrent claims of one key', async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => store.claim('evt_race', LONG_MS)));
    expect(results.filter((r) => r.outcome === 'claimed')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'in-flight')).toHaveLength(49);
  });

  it('rejects bad arguments with typed errors', async () => {
    await expect(store.claim('', LONG_MS)).rejects.toBeInstanceOf(TypeError);
    await expect(store.claim('evt_1', 0)).rejects.toBeInstanceOf(RangeError);
    await expect(store.claim('evt_1', 1.5)).rejects.toBeInstanceOf(RangeError);
    await expect(store.complete('evt_1', '', LONG_MS)).rejects.toBeInstanceOf(TypeError);
    await expect(store.complete('evt_1', 'x', -1)).rejects.toBeInstanceOf(RangeError);
    await expect(store.release('evt_1', '')).rejects.toBeInstanceOf(TypeError);
  });
});
