// One million distinct event ids through the default-sized memory store: the
// bound holds at every step and the heap does not grow with the id count.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';

const IDS = 1_000_000;
const DAY_MS = 24 * 60 * 60 * 1000;

function forceGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

it('keeps at most maxEntries ids and well under 200 MB of heap for 1 000 000 distinct ids', async () => {
  forceGc();
  const heapBefore = process.memoryUsage().heapUsed;
  const store = new MemoryWebhookEventStore(); // default bound: 100 000
  let largest = 0;
  let peakHeap = heapBefore; // largest live heap seen during the run

  for (let i = 0; i < IDS; i++) {
    const key = `evt_${i.toString(36)}_${(i * 7919).toString(16)}`;
    const result = await store.claim(key, 60_000);
    if (result.outcome !== 'claimed') throw new Error(`id ${key} was not new: ${result.outcome}`);
    await store.complete(key, result.claimToken, 7 * DAY_MS);
    if (store.size > largest) largest = store.size;
    if (i % 100_000 === 0) {
      // Live heap, not garbage V8 has not collected yet: the latter depends on GC timing, not on the store.
      forceGc();
      peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    }
  }

  expect(largest).toBe(store.maxEntries);
  expect(store.maxEntries).toBe(100_000);
  // the most recent ids are still recognised
  await expect(store.claim(`evt_${(IDS - 1).toString(36)}_${((IDS - 1) * 7919).toString(16)}`, 60_000)).resolves.toEqual({
    outcome: 'processed',
  });

  forceGc();
  const retainedMb = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
  expect(retainedMb).toBeLessThan(200);
  expect((peakHeap - heapBefore) / 1e6).toBeLessThan(200);
  expect(store.size).toBe(100_000); // keeps the store alive until after the measure
}, 120_000); // CPU-bound: give a busy CI machine room
