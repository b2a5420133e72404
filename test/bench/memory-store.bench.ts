// Benchmark 4: 1,000,000 distinct ids through MemoryWebhookEventStore with its default bound.
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { type BenchRow, fmt } from './bench-util.js';

const MB = 1024 * 1024;

function collect(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run the benchmark with node --expose-gc (npm run bench does)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export async function memoryStore(settings: { ids: number }): Promise<BenchRow[]> {
  const store = new MemoryWebhookEventStore();
  const before = collect();
  let peakHeap = before;
  let peakEntries = 0;
  for (let i = 0; i < settings.ids; i++) {
    const key = `evt_mem_${i.toString(36)}_${(i * 2654435761) >>> 0}`;
    const claim = await store.claim(key, 60_000);
    if (claim.outcome !== 'claimed') throw new Error(`id ${key} was not new: ${claim.outcome}`);
    await store.complete(key, claim.claimToken, 7 * 24 * 3600 * 1000);
    if (store.size > peakEntries) peakEntries = store.size;
    if (i % 100_000 === 99_999) peakHeap = Math.max(peakHeap, collect());
  }
  const after = collect();
  peakHeap = Math.max(peakHeap, after);
  const growthMb = (peakHeap - before) / MB;
  return [
    {
      benchmark: '4. memory store, 1M ids',
      measured: `heap ${fmt(before / MB, 1)} → peak ${fmt(peakHeap / MB, 1)} MB (after GC)`,
      figure: `+${growthMb.toFixed(1)} MB`,
      target: '< 200 MB',
      pass: growthMb < 200,
    },
    {
      benchmark: '4. memory store bound',
      measured: `entries checked after every id, bound ${fmt(store.maxEntries)}`,
      figure: `max ${fmt(peakEntries)}`,
      target: `≤ ${fmt(store.maxEntries)}`,
      pass: peakEntries <= store.maxEntries,
    },
  ];
}
