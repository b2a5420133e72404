// The renewal loop that keeps running handlers' claims alive, against the real memory store
// (a subclass injects extend failures: the store's own logic is untouched). Time is jest's
// fake clock, which the store's expiries and the renewer's interval both follow, so a busy
// machine cannot make a lease lapse between two renewals.
import { jest } from '@jest/globals';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { WebhookLeaseRenewer } from '../../lib/webhooks/webhook-lease-renewer.js';
import { CollectingLogger } from '../support/collecting-logger.js';

const LEASE_MS = 150;
/** Moves the fake clock on, running the timers (and the promises they start) that fall due. */
const sleep = (ms: number) => jest.advanceTimersByTimeAsync(ms);

/** The real store; `failExtends` makes that many renewals fail like a Redis time-out. */
class FlakyExtendStore extends MemoryWebhookEventStore {
  failExtends = 0;
  extendCalls = 0;

  override async extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
    this.extendCalls++;
    if (this.failExtends > 0) {
      this.failExtends--;
      throw new Error('Redis did not answer within 2000 ms');
    }
    return super.extend(key, claimToken, leaseMs);
  }
}

async function claimed(store: MemoryWebhookEventStore, key: string): Promise<string> {
  const claim = await store.claim(key, LEASE_MS);
  if (claim.outcome !== 'claimed') throw new Error(`expected a claim, got ${claim.outcome}`);
  return claim.claimToken;
}

describe('WebhookLeaseRenewer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('keeps a claim alive over many leases while its handlers run, then stops when untracked', async () => {
    const store = new FlakyExtendStore();
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, new CollectingLogger());
    const tracked = renewer.track('evt_1', await claimed(store, 'evt_1'));
    await sleep(LEASE_MS * 4);
    await expect(store.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    renewer.untrack(tracked);
    await sleep(LEASE_MS * 1.5);
    await expect(store.claim('evt_1', LEASE_MS)).resolves.toMatchObject({ outcome: 'claimed' });
    renewer.close();
  });

  it('renews at most a third of the lease apart, counted from the claim, for a claim tracked between two ticks', async () => {
    const store = new FlakyExtendStore();
    const sentAt: number[] = [];
    const extend = store.extend.bind(store);
    store.extend = (key, token, leaseMs) => {
      sentAt.push(Date.now());
      return extend(key, token, leaseMs);
    };
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, new CollectingLogger(), () => Date.now());
    // another claim started the timer a moment before: this one falls between its ticks
    const first = renewer.track('evt_first', await claimed(store, 'evt_first'));
    await sleep(1);
    const claimedAt = Date.now();
    const tracked = renewer.track('evt_gap', await claimed(store, 'evt_gap'), claimedAt);
    renewer.untrack(first);
    await sleep(LEASE_MS * 4);
    // untracked before the timer's first tick: every renewal sent is this claim's
    const gaps = [sentAt[0]! - claimedAt, ...sentAt.slice(1).map((at, i) => at - sentAt[i]!)];
    // was up to half the lease (renewed a third of the lease after the last, seen every sixth)
    expect(Math.max(...gaps)).toBeLessThanOrEqual(LEASE_MS / 3);
    renewer.untrack(tracked);
    renewer.close();
  });

  it('a store whose extend throws instead of rejecting is a failed renewal, retried: not an exception thrown from the timer', async () => {
    class ThrowingExtendStore extends FlakyExtendStore {
      throwsLeft = 1;
      // not async: throws synchronously, as a custom store's client may ("client is closed")
      override extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
        if (this.throwsLeft-- > 0) throw new Error('client is closed');
        return super.extend(key, claimToken, leaseMs);
      }
    }
    const store = new ThrowingExtendStore();
    const logger = new CollectingLogger();
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, logger);
    renewer.track('evt_throw', await claimed(store, 'evt_throw'));
    // before, the throw escaped the interval's callback: an uncaught exception ends the process
    await sleep(LEASE_MS * 3);
    expect(logger.messages('warn').join('\n')).toMatch(/Could not renew the claim of webhook event "evt_throw" \(Error: client is closed\); retrying/);
    await expect(store.claim('evt_throw', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    renewer.close();
  });

  it('renews any number of claims with one timer, and stops it once none is tracked', async () => {
    const store = new FlakyExtendStore();
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, new CollectingLogger());
    const baseline = jest.getTimerCount();
    const claims = [];
    for (let i = 0; i < 50; i++) claims.push(renewer.track(`evt_${i}`, await claimed(store, `evt_${i}`)));
    expect(jest.getTimerCount() - baseline).toBe(1);
    await sleep(LEASE_MS * 3);
    // every claim outlived three leases: each one was renewed
    for (let i = 0; i < 50; i++) await expect(store.claim(`evt_${i}`, LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    expect(jest.getTimerCount() - baseline).toBe(1);
    for (const claim of claims) renewer.untrack(claim);
    await sleep(LEASE_MS);
    expect(jest.getTimerCount()).toBe(baseline);
    renewer.close();
  });

  it('keeps retrying after a failed renewal while the lease has not lapsed (one time-out does not end renewal)', async () => {
    const store = new FlakyExtendStore();
    const logger = new CollectingLogger();
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, logger);
    store.failExtends = 1;
    const tracked = renewer.track('evt_2', await claimed(store, 'evt_2'));
    await sleep(LEASE_MS * 5);
    // the first renewal failed, the next ones went through: the claim never lapsed
    expect(store.extendCalls).toBeGreaterThanOrEqual(3);
    await expect(store.claim('evt_2', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    expect(logger.messages().filter((l) => l.includes('Could not renew'))).toHaveLength(1);
    expect(logger.messages()[0]).toContain('retrying');
    expect(renewer.size).toBe(1);
    renewer.untrack(tracked);
    renewer.close();
  });

  it('does not wait forever on a renewal that never answers (a custom store that hangs): the next one is sent', async () => {
    const store = new FlakyExtendStore();
    const logger = new CollectingLogger();
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, logger);
    const extend = store.extend.bind(store);
    let hangs = 1;
    store.extend = (key, token, leaseMs) => (hangs-- > 0 ? new Promise<boolean>(() => undefined) : extend(key, token, leaseMs));
    const tracked = renewer.track('evt_hang', await claimed(store, 'evt_hang'));
    await sleep(LEASE_MS * 5);
    await expect(store.claim('evt_hang', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    expect(logger.messages().some((l) => l.includes('did not answer'))).toBe(true);
    renewer.untrack(tracked);
    renewer.close();
  });

  it('keeps trying once the lease has lapsed (an outage longer than the lease), says so once, and takes the free key back when the store answers', async () => {
    const store = new FlakyExtendStore();
    const logger = new CollectingLogger();
    const renewer = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, logger);
    store.failExtends = 20; // about three leases of failed renewals, a sixth of a lease apart
    const tracked = renewer.track('evt_3', await claimed(store, 'evt_3'));
    await sleep(LEASE_MS * 2);
    expect(renewer.size).toBe(1);
    const failures = logger.messages('warn').filter((l) => l.includes('Could not renew'));
    expect(failures).toHaveLength(2); // when the renewals start failing, and when the lease lapses: not at every retry
    expect(failures[1]).toContain('its lease has lapsed, so another delivery may run it again; still trying to take it back');
    await sleep(LEASE_MS * 2);
    // the store answers again: the key, free since the lease lapsed, is taken back and a copy is held off
    await expect(store.claim('evt_3', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    expect(logger.messages('log').some((l) => /claim of webhook event "evt_3" is renewed again, after 20 failed attempt/.test(l))).toBe(true);
    renewer.untrack(tracked);
    renewer.close();
  });

  it('stops renewing a claim it lost, and one that ran past maxRenewalMs', async () => {
    const store = new FlakyExtendStore();
    const logger = new CollectingLogger();
    const lost = new WebhookLeaseRenewer(store, LEASE_MS, 60_000, logger);
    lost.track('evt_4', 'not-the-owner');
    await store.claim('evt_4', LEASE_MS);
    await sleep(LEASE_MS);
    expect(lost.size).toBe(0);
    expect(logger.messages().some((l) => l.includes('was lost'))).toBe(true);
    lost.close();

    const capped = new WebhookLeaseRenewer(store, LEASE_MS, LEASE_MS, logger);
    capped.track('evt_5', await claimed(store, 'evt_5'));
    await sleep(LEASE_MS * 2);
    expect(capped.size).toBe(0);
    expect(logger.messages().some((l) => l.includes('no longer renewing'))).toBe(true);
    capped.close();
  });
});
