import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import type { WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

// isProcessed: the non-claiming read the queue-mode route uses to answer copies of handled events.
describe.each(['memory', 'redis'] as const)('%s store: isProcessed', (kind) => {
  let redis: TestRedisServer | undefined;
  let store: WebhookEventStore;
  let now = 1_000_000;

  beforeAll(async () => {
    if (kind === 'redis') redis = await startRedisServer();
  });
  beforeEach(() => {
    store = kind === 'memory' ? new MemoryWebhookEventStore({ now: () => now }) : new RedisWebhookEventStore(redis!.url, { keyPrefix: `read-${Date.now()}:` });
  });
  afterEach(async () => {
    await store.close?.();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('is true only for a completed key, and never claims', async () => {
    expect(await store.isProcessed!('k1')).toBe(false);
    // reading did not claim: the key is still free
    const claim = await store.claim('k1', 60_000);
    expect(claim.outcome).toBe('claimed');
    expect(await store.isProcessed!('k1')).toBe(false); // in flight is not processed
    if (claim.outcome !== 'claimed') throw new Error('unreachable');
    await store.complete('k1', claim.claimToken, 60_000);
    expect(await store.isProcessed!('k1')).toBe(true);
    expect((await store.claim('k1', 60_000)).outcome).toBe('processed');
  });

  it('forgets a processed key after its retention', async () => {
    const claim = await store.claim('k2', 60_000);
    if (claim.outcome !== 'claimed') throw new Error('expected a claim');
    await store.complete('k2', claim.claimToken, 1000);
    expect(await store.isProcessed!('k2')).toBe(true);
    if (kind === 'memory') now += 1001;
    else await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await store.isProcessed!('k2')).toBe(false);
  });

  it('refuses an empty key', async () => {
    await expect(store.isProcessed!('')).rejects.toThrow(TypeError);
  });
});
