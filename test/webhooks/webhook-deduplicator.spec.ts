// The deduplicator's renewal loops, against the real memory store on jest's fake clock.
import { jest } from '@jest/globals';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { WebhookDeduplicator } from '../../lib/webhooks/webhook-deduplicator.js';
import { CollectingLogger } from '../support/collecting-logger.js';

const LEASE_MS = 150;

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
});
