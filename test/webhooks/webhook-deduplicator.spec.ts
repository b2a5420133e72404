// The deduplicator's renewal loops, against the real memory store on jest's fake clock.
import { jest } from '@jest/globals';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { WebhookDeduplicator } from '../../lib/webhooks/webhook-deduplicator.js';
import { CollectingLogger } from '../support/collecting-logger.js';

const LEASE_MS = 150;

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The real memory store whose first claim is made at once but answered `lateMs` later (a slow link,
 * a paused process), a deduplicator over it, and a piece of work taking `workMs` that counts its runs.
 */
function lateFirstClaim(leaseMs: number, lateMs: number, workMs: number) {
  const store = new MemoryWebhookEventStore();
  let slowAnswers = 1;
  const claim = store.claim.bind(store);
  store.claim = async (key, lease) => {
    const result = await claim(key, lease);
    if (slowAnswers-- > 0) await wait(lateMs);
    return result;
  };
  const counted = { runs: 0 };
  const work = async () => {
    counted.runs++;
    await wait(workMs);
  };
  const settings = { leaseMs, retentionMs: 60_000, completeAttempts: 3, maxLeaseRenewalMs: 60_000 };
  return { deduplicator: new WebhookDeduplicator(store, new CollectingLogger()), settings, work, counted, store };
}

describe('WebhookDeduplicator', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('renews each claim up to its own route limit, when two routes share a lease but not the limit', async () => {
    const store = new MemoryWebhookEventStore();
    const deduplicator = new WebhookDeduplicator(store, new CollectingLogger());
    const short = { leaseMs: LEASE_MS, retentionMs: 60_000, completeAttempts: 3, maxLeaseRenewalMs: LEASE_MS };
    const long = { ...short, maxLeaseRenewalMs: 60_000 };
    // the short route's loop exists first
    await deduplicator.run('evt_short', short, async () => 'done');

    let release!: () => void;
    const running = deduplicator.run('evt_long', long, () => new Promise<void>((resolve) => (release = resolve)));
    await jest.advanceTimersByTimeAsync(LEASE_MS * 8);
    // still held: renewed past the short route's limit
    await expect(store.claim('evt_long', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
    release();
    await running;
    deduplicator.close();
  });

  it('a claim answered after its lease had run out, while a copy took the event, runs nothing (409): the handlers run once', async () => {
    jest.useRealTimers();
    const { deduplicator, settings, work, counted } = lateFirstClaim(LEASE_MS, LEASE_MS + 100, 300);
    const late = deduplicator.run('evt_late', settings, work);
    await wait(LEASE_MS + 20); // the first claim lapsed: a copy takes it
    const copy = deduplicator.run('evt_late', settings, work);
    await expect(late).rejects.toMatchObject({ code: 'WEBHOOK_EVENT_IN_FLIGHT' });
    await copy;
    expect(counted.runs).toBe(1);
    deduplicator.close();
  });

  it('a claim answered nine tenths of its lease late is confirmed and kept: a copy arriving after the lease still gets 409', async () => {
    jest.useRealTimers();
    const lease = 600;
    const { deduplicator, settings, work, counted } = lateFirstClaim(lease, lease * 0.9, 400);
    const late = deduplicator.run('evt_late_kept', settings, work);
    // past the lease counted from the claim: before, the first renewal came a sixth of a lease after the answer, too late
    await wait(lease + 30);
    await expect(deduplicator.run('evt_late_kept', settings, work)).rejects.toMatchObject({ code: 'WEBHOOK_EVENT_IN_FLIGHT' });
    await late;
    expect(counted.runs).toBe(1);
    deduplicator.close();
  });

  it.each([
    ['never answers', () => new Promise<boolean>(() => undefined)],
    ['fails', () => Promise.reject(new Error('store down'))],
  ])('a late claim whose confirmation %s runs nothing and is answered 503 (store unavailable), within a third of the lease', async (_, extend) => {
    jest.useRealTimers();
    // a lease long enough that the bound leaves a busy CI machine half a second and still tells
    // a third of the lease from a whole one
    const lease = 1500;
    const { deduplicator, settings, work, counted, store } = lateFirstClaim(lease, lease * 0.9, 10);
    store.extend = extend;
    const started = Date.now();
    await expect(deduplicator.run('evt_late_unconfirmed', settings, work)).rejects.toMatchObject({ code: 'WEBHOOK_STORE_UNAVAILABLE' });
    expect(Date.now() - started).toBeLessThan(lease * 0.9 + lease / 3 + 500);
    expect(counted.runs).toBe(0);
    expect(deduplicator.runningCount).toBe(0);
    deduplicator.close();
  });

  describe('at shutdown (finishRunning)', () => {
    const settings = { leaseMs: LEASE_MS, retentionMs: 60_000, completeAttempts: 3, maxLeaseRenewalMs: 60_000 };

    it('waits for runs between claim and outcome, the completion included, and returns at once when none runs', async () => {
      const store = new MemoryWebhookEventStore();
      const logger = new CollectingLogger();
      const deduplicator = new WebhookDeduplicator(store, logger);
      let idle = false;
      await deduplicator.finishRunning(1000, 'account test').then(() => (idle = true));
      expect(idle).toBe(true);
      expect(logger.messages()).toEqual([]);

      let release!: () => void;
      const running = deduplicator.run('evt_1', settings, () => new Promise<void>((resolve) => (release = resolve)));
      await jest.advanceTimersByTimeAsync(0);
      expect(deduplicator.runningCount).toBe(1);
      let finished = false;
      const finishing = deduplicator.finishRunning(10_000, 'account test').then(() => (finished = true));
      await jest.advanceTimersByTimeAsync(LEASE_MS * 4);
      expect(finished).toBe(false);
      // still held meanwhile: renewal goes on until close()
      await expect(store.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'in-flight' });
      release();
      await finishing;
      await running;
      // the wait ended after completion was recorded
      await expect(store.claim('evt_1', LEASE_MS)).resolves.toEqual({ outcome: 'processed' });
      expect(logger.messages('log')).toEqual(['Waiting up to 10000 ms for 1 running webhook delivery(ies) of account test']);
      expect(logger.messages('warn')).toEqual([]);
      deduplicator.close();
    });

    it('gives up after its time-out and says so; a failed run ends the wait too', async () => {
      const store = new MemoryWebhookEventStore();
      const logger = new CollectingLogger();
      const deduplicator = new WebhookDeduplicator(store, logger);
      const hung = deduplicator.run('evt_hung', settings, () => new Promise<void>(() => undefined));
      void hung;
      await jest.advanceTimersByTimeAsync(0);
      let finished = false;
      const finishing = deduplicator.finishRunning(500, 'account test').then(() => (finished = true));
      await jest.advanceTimersByTimeAsync(499);
      expect(finished).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      await finishing;
      expect(logger.messages('warn')).toEqual([
        expect.stringMatching(/^1 webhook delivery\(ies\) of account test still running after 500 ms of shutdown \(evt_hung\); .*run their handlers again$/),
      ]);
      deduplicator.close();

      const other = new WebhookDeduplicator(store, logger);
      let fail!: (error: Error) => void;
      const failing = other.run('evt_2', settings, () => new Promise<void>((_, reject) => (fail = reject))).catch((error: unknown) => error);
      await jest.advanceTimersByTimeAsync(0);
      const waited = other.finishRunning(10_000, 'account test');
      fail(new Error('handler failed'));
      await expect(failing).resolves.toThrow('handler failed');
      await waited;
      expect(other.runningCount).toBe(0);
      other.close();
    });
  });

  it('ends endless completions waiting on a hung store as soon as it closes, however many wait', async () => {
    class HungCompletions extends MemoryWebhookEventStore {
      override complete(): Promise<void> {
        return new Promise<void>(() => undefined);
      }
    }
    jest.useRealTimers();
    const logger = new CollectingLogger();
    const deduplicator = new WebhookDeduplicator(new HungCompletions(), logger);
    const endless = { leaseMs: LEASE_MS, retentionMs: 60_000, completeAttempts: Number.POSITIVE_INFINITY, maxLeaseRenewalMs: 60_000, completeTimeoutMs: 60_000 };
    const runs = Array.from({ length: 20 }, (_, i) => deduplicator.run(`evt_${i}`, endless, async () => i));
    await new Promise((resolve) => setTimeout(resolve, 10));
    deduplicator.close();
    // each answered with its own result (the work was done), each giving up logged
    await expect(Promise.all(runs)).resolves.toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(logger.messages('error').filter((m) => m.includes('shutdown stopped waiting for the store'))).toHaveLength(20);
  });

  describe('a claim answered after close() (shutdown gave up on its run)', () => {
    /** A store whose claim waits for `open()`, and whose release then fails (the store is closing too). */
    class LateClaims extends MemoryWebhookEventStore {
      open!: () => void;
      private readonly gate = new Promise<void>((resolve) => (this.open = resolve));
      override async claim(key: string, leaseMs: number) {
        await this.gate;
        return super.claim(key, leaseMs);
      }
      override async release(): Promise<void> {
        throw new Error('store closed');
      }
    }

    it.each([
      ["folded into the caller's line", true],
      ['said in a warning', false],
    ])('starts nothing, answers 503, and the claim it could not release is %s', async (_label, fold) => {
      const store = new LateClaims();
      const logger = new CollectingLogger();
      const deduplicator = new WebhookDeduplicator(store, logger, { logClaimFailures: false, foldReleaseFailures: fold });
      let ran = false;
      const run = deduplicator.run('default:event:evt_late', { leaseMs: 60_000, retentionMs: 3_600_000, completeAttempts: 3, maxLeaseRenewalMs: 60_000 }, async () => {
        ran = true;
      });
      deduplicator.close();
      store.open();
      const error = await run.then(() => undefined, (e: unknown) => e);
      expect(ran).toBe(false);
      expect(error).toMatchObject({ status: 503 });
      if (fold) {
        expect(deduplicator.unreleasedClaimOf(error)).toContain('store closed');
      } else {
        expect(logger.messages('warn')).toContainEqual(expect.stringMatching(/^Could not release the claim of webhook event "default:event:evt_late" \(.*store closed/));
      }
    });
  });
});
