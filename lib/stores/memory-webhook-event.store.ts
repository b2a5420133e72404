import { monotonicNow } from '../common/monotonic-clock.util.js';
import { PAYMENT_OPTION_DEFAULTS } from '../config/payment-options.defaults.js';
import type { WebhookClaimResult, WebhookEventStore } from './webhook-event-store.interface.js';
import { assertDuration, assertKey, assertToken } from './webhook-event-store.validation.js';

/** @publicApi */
export interface MemoryWebhookEventStoreOptions {
  /**
   * Most event ids kept at once; the least recently used is forgotten first.
   * @default 100000
   */
  maxEntries?: number | undefined;
  /** Clock in epoch milliseconds, for tests. @default a monotonic clock (a wall-clock step does not expire a lease) */
  now?: (() => number) | undefined;
}

const DEFAULT_MEMORY_STORE_MAX_ENTRIES: number = PAYMENT_OPTION_DEFAULTS.memoryStoreMaxEntries;

/**
 * How many live claims eviction may step over before it lets the store grow instead.
 * Keeps every operation O(1) even when the oldest entries are all in flight.
 */
const LIVE_CLAIM_SKIP_LIMIT = 64;

/** One remembered id: an in-flight claim (token set) or a processed event (no token). */
class Entry {
  constructor(
    public token: string | undefined,
    public expiresAt: number,
  ) {}
}

const PROCESSED: WebhookClaimResult = Object.freeze({ outcome: 'processed' });
const IN_FLIGHT: WebhookClaimResult = Object.freeze({ outcome: 'in-flight' });

/**
 * In-process store, the default. Atomic because every method runs synchronously
 * inside one event-loop turn; it does NOT deduplicate across several processes
 * (use `RedisWebhookEventStore` for that).
 *
 * Memory is bounded by `maxEntries`. A Map keeps insertion order, so deleting and
 * re-inserting a key on use turns it into an O(1) LRU list. Expired entries are
 * dropped lazily: when their key is used again, or when eviction reaches them.
 *
 * A live in-flight claim is never evicted (a copy of its event would be claimed
 * and run again): eviction moves it to the recent end and tries the next entry.
 * When the oldest 64 entries (or all of them) are live claims, the store holds
 * one more instead; it exceeds `maxEntries` by at most the deliveries in flight
 * (each holds its request open) and comes back within it as they finish.
 * @publicApi
 */
export class MemoryWebhookEventStore implements WebhookEventStore {
  readonly maxEntries: number;
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;
  #cursor: MapIterator<[string, Entry]> = this.#entries.entries();
  /** Claim tokens only need to be unique within this store: a counter is enough (and cheaper than a UUID). */
  #lastToken = 0;

  constructor(options: MemoryWebhookEventStoreOptions = {}) {
    const maxEntries = options.maxEntries ?? DEFAULT_MEMORY_STORE_MAX_ENTRIES;
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`MemoryWebhookEventStore: maxEntries must be a positive integer, got ${String(maxEntries)}`);
    }
    this.maxEntries = maxEntries;
    this.#now = options.now ?? monotonicNow;
  }

  /** Number of ids currently held (expired ones not yet dropped included). */
  get size(): number {
    return this.#entries.size;
  }

  async claim(key: string, leaseMs: number): Promise<WebhookClaimResult> {
    assertKey(key);
    assertDuration('leaseMs', leaseMs);
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry) {
      this.#touch(key, entry);
      return entry.token === undefined ? PROCESSED : IN_FLIGHT;
    }
    const claimToken = `c${++this.#lastToken}`;
    this.#insert(key, new Entry(claimToken, now + leaseMs), now);
    return { outcome: 'claimed', claimToken };
  }

  /**
   * Marks `key` processed when `claimToken` still holds it, or when nobody holds it
   * any more (our lease ran out but no other delivery took over): the handlers did
   * run, so recording it prevents a second run. Does nothing when another delivery
   * holds a live claim or the event is already processed.
   */
  async complete(key: string, claimToken: string, retentionMs: number): Promise<void> {
    assertKey(key);
    assertToken(claimToken);
    assertDuration('retentionMs', retentionMs);
    const now = this.#now();
    const entry = this.#live(key, now);
    if (entry === undefined) {
      this.#insert(key, new Entry(undefined, now + retentionMs), now);
    } else if (entry.token === claimToken) {
      entry.token = undefined; // drop the token: a processed entry stays small
      entry.expiresAt = now + retentionMs;
      this.#touch(key, entry);
    }
  }

  async extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
    assertKey(key);
    assertToken(claimToken);
    assertDuration('leaseMs', leaseMs);
    const now = this.#now();
    const entry = this.#live(key, now);
    // free (the lease lapsed and nobody claimed it): taken back, its handlers are still running
    if (entry === undefined) {
      this.#insert(key, new Entry(claimToken, now + leaseMs), now);
      return true;
    }
    if (entry.token !== claimToken) return false;
    entry.expiresAt = now + leaseMs;
    this.#touch(key, entry);
    return true;
  }

  async release(key: string, claimToken: string): Promise<void> {
    assertKey(key);
    assertToken(claimToken);
    const entry = this.#entries.get(key);
    if (entry && entry.token === claimToken) this.#entries.delete(key);
  }

  /** Reads without touching the LRU order: a read is not a use. */
  async isProcessed(key: string): Promise<boolean> {
    assertKey(key);
    const entry = this.#entries.get(key);
    return entry !== undefined && entry.token === undefined && entry.expiresAt > this.#now();
  }

  async close(): Promise<void> {
    this.#entries.clear();
    this.#cursor = this.#entries.entries();
  }

  /** The entry of `key` if it has not expired; an expired one is dropped. */
  #live(key: string, now: number): Entry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry;
    this.#entries.delete(key);
    return undefined;
  }

  #touch(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
  }

  #insert(key: string, entry: Entry, now: number): void {
    // Re-inserting moves the key to the recent end and never needs room.
    if (this.#entries.delete(key)) {
      this.#entries.set(key, entry);
      return;
    }
    this.#makeRoom(now);
    this.#entries.set(key, entry);
  }

  /** Frees one slot when the store is full (more when it grew past the bound), never a live claim's. */
  #makeRoom(now: number): void {
    // each entry looked at once at most: the skipped ones come round again at the recent end
    const skipLimit = Math.min(LIVE_CLAIM_SKIP_LIMIT, this.#entries.size);
    let skips = 0;
    while (this.#entries.size >= this.maxEntries && skips < skipLimit) {
      const [oldestKey, oldest] = this.#oldest();
      this.#entries.delete(oldestKey);
      if (oldest.token !== undefined && oldest.expiresAt > now) {
        skips++;
        this.#entries.set(oldestKey, oldest);
      }
    }
  }

  /**
   * The least recently used entry. Every entry this returns is then deleted or
   * moved to the recent end, so a long-lived iterator always sits at the old end.
   * Asking a fresh iterator each time would be O(n): V8 leaves deleted slots at
   * the front of the table until it rehashes, and each fresh scan walks them.
   */
  #oldest(): [string, Entry] {
    let next = this.#cursor.next();
    if (next.done) {
      this.#cursor = this.#entries.entries();
      next = this.#cursor.next();
    }
    return next.value as [string, Entry];
  }
}
