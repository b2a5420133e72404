import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const LEASE_MS = 60_000;

function storeWithClock(maxEntries?: number) {
  const clock = { now: 1_700_000_000_000 };
  const store = new MemoryWebhookEventStore({ maxEntries, now: () => clock.now });
  return { store, clock };
}

async function claimAndComplete(store: MemoryWebhookEventStore, key: string, retentionMs = 7 * DAY_MS) {
  const result = await store.claim(key, LEASE_MS);
  if (result.outcome !== 'claimed') throw new Error(`expected claim of ${key}, got ${result.outcome}`);
  await store.complete(key, result.claimToken, retentionMs);
}

describe('MemoryWebhookEventStore', () => {
  it('defaults to 100 000 entries and rejects a bad bound', () => {
    expect(new MemoryWebhookEventStore().maxEntries).toBe(100_000);
    expect(() => new MemoryWebhookEventStore({ maxEntries: 0 })).toThrow(RangeError);
    expect(() => new MemoryWebhookEventStore({ maxEntries: 2.5 })).toThrow(RangeError);
  });

  it('keeps a processed id for the whole retention (7 days) and forgets it after', async () => {
    const { store, clock } = storeWithClock();
    await claimAndComplete(store, 'evt_1', 7 * DAY_MS);
    clock.now += 7 * DAY_MS - 1;
    await expect(store.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
    clock.now += 1;
    await expect(store.claim('evt_1', LEASE_MS)).resolves.toMatchObject({ outcome: 'claimed' });
  });

  it('keeps time on a monotonic clock by default: a wall-clock step forward does not expire a running claim', async () => {
    const { jest } = await import('@jest/globals');
    const realNow = Date.now.bind(Date);
    let step = 0;
    // in place before the store is made, in case it keeps a reference to Date.now
    const stepped = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + step);
    try {
      const store = new MemoryWebhookEventStore();
      const claim = await store.claim('default:event:evt_clock_step', LEASE_MS);
      expect(claim.outcome).toBe('claimed');
      // an NTP step or a resumed VM: the wall clock jumps ten minutes ahead while the handler runs
      step = 10 * 60_000;
      await expect(store.claim('default:event:evt_clock_step', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
      await expect(store.extend('default:event:evt_clock_step', (claim as { claimToken: string }).claimToken, LEASE_MS)).resolves.toBe(true);
    } finally {
      stepped.mockRestore();
    }
  });

  it('holds a claim for exactly its lease', async () => {
    const { store, clock } = storeWithClock();
    await store.claim('evt_1', 1000);
    clock.now += 999;
    await expect(store.claim('evt_1', 1000)).resolves.toEqual({ outcome: 'in-flight' });
    clock.now += 1;
    await expect(store.claim('evt_1', 1000)).resolves.toMatchObject({ outcome: 'claimed' });
  });

  it('evicts the least recently used id when full, and never grows past the bound', async () => {
    const { store } = storeWithClock(3);
    await claimAndComplete(store, 'a');
    await claimAndComplete(store, 'b');
    await claimAndComplete(store, 'c');
    // a duplicate of 'a' makes it recent: 'b' is now the oldest
    await expect(store.claim('a', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
    await claimAndComplete(store, 'd');
    expect(store.size).toBe(3);
    await expect(store.claim('a', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
    await expect(store.claim('c', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
    await expect(store.claim('d', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
    expect(store.size).toBe(3);
    // 'b' was forgotten to make room (so now it can be claimed again, evicting the oldest)
    await expect(store.claim('b', LEASE_MS)).resolves.toMatchObject({ outcome: 'claimed' });
    expect(store.size).toBe(3);
  });

  it('evicts processed ids before a live in-flight claim, even an older one', async () => {
    const { store } = storeWithClock(3);
    const inFlight = await store.claim('live', LEASE_MS);
    await claimAndComplete(store, 'p1');
    await claimAndComplete(store, 'p2');
    await claimAndComplete(store, 'p3');
    await claimAndComplete(store, 'p4');
    expect(store.size).toBe(3);
    await expect(store.claim('live', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    // the claim still belongs to its owner
    if (inFlight.outcome !== 'claimed') throw new Error('setup');
    await store.complete('live', inFlight.claimToken, DAY_MS);
    await expect(store.claim('live', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('evicts an expired claim like any other entry', async () => {
    const { store, clock } = storeWithClock(2);
    await store.claim('stale', 1000);
    await claimAndComplete(store, 'p1');
    clock.now += 1000;
    await claimAndComplete(store, 'p2');
    expect(store.size).toBe(2);
    await expect(store.claim('p1', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('never evicts a live claim (its event would run twice): past the bound by the deliveries in flight, back within it as they finish', async () => {
    const { store } = storeWithClock(100);
    const tokens: string[] = [];
    for (let i = 0; i < 500; i++) {
      const claimed = await store.claim(`live_${i}`, LEASE_MS);
      if (claimed.outcome !== 'claimed') throw new Error('setup');
      tokens.push(claimed.claimToken);
    }
    // was 100: the 400 oldest claims were forgotten, and a copy of each was claimed and run again
    expect(store.size).toBe(500);
    for (let i = 0; i < 500; i++) await expect(store.claim(`live_${i}`, LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    for (let i = 0; i < 500; i++) await store.complete(`live_${i}`, tokens[i]!, DAY_MS);
    await claimAndComplete(store, 'after');
    expect(store.size).toBe(100);
  });

  it('with a bound smaller than the deliveries in flight, each copy of a running event is still in flight', async () => {
    const { store } = storeWithClock(2);
    for (const key of ['a', 'b', 'c']) expect((await store.claim(key, LEASE_MS)).outcome).toBe('claimed');
    // was 'claimed' for each: 64 skips cycled over the same 2 claims, then evicted one
    for (const key of ['a', 'b', 'c']) await expect(store.claim(key, LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
  });

  it('a lapsed claim taken back by its renewal (extend) does not evict a running one', async () => {
    const { store, clock } = storeWithClock(2);
    const slow = await store.claim('slow', 1000);
    if (slow.outcome !== 'claimed') throw new Error('setup');
    clock.now += 1000;
    await store.claim('x', LEASE_MS);
    await store.claim('y', LEASE_MS); // 'slow' expired: evicted to make room
    await expect(store.extend('slow', slow.claimToken, LEASE_MS)).resolves.toBe(true);
    for (const key of ['x', 'y', 'slow']) await expect(store.claim(key, LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
  });

  it('never exceeds the bound over many distinct ids (a duplicate still dedupes while remembered)', async () => {
    const { store, clock } = storeWithClock(1000);
    let maxSize = 0;
    for (let i = 0; i < 20_000; i++) {
      await claimAndComplete(store, `evt_${i}`);
      // a redelivery 500 events later is still recognised (and becomes recent again)
      if (i >= 500 && i % 3 === 0) {
        await expect(store.claim(`evt_${i - 500}`, LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
      }
      clock.now += 1;
      maxSize = Math.max(maxSize, store.size);
    }
    expect(maxSize).toBe(1000);
    await expect(store.claim('evt_19999', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
  });

  it('forgets everything on close', async () => {
    const { store } = storeWithClock();
    await claimAndComplete(store, 'evt_1');
    await store.close();
    expect(store.size).toBe(0);
  });
});
