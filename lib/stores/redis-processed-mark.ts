// Where a Redis store keeps an event's "processed" mark, for the queue-mode route: when the
// store and the queue share one connection, the queue's job-state read checks the mark in its
// own script (one command per delivery instead of two; see `queued-job-state.ts`). Kept apart
// from the store class, so it adds nothing to the store's public surface.
import type { RedisClientLike } from './redis-client.js';

/** The value of a key that `RedisWebhookEventStore.complete` marked processed. */
export const PROCESSED_VALUE = 'processed';

const marksOf = new WeakMap<object, { client: RedisClientLike; keyPrefix: string }>();

/** Called by each Redis store as it is made: `store` writes its keys under `keyPrefix` on `client`. */
export function registerProcessedMarks(store: object, client: RedisClientLike, keyPrefix: string): void {
  marksOf.set(store, { client, keyPrefix });
}

/**
 * The Redis key of a store key's processed mark, when `store` is a Redis store on `client`
 * itself (a script on another connection, or another Redis, cannot read it); else `undefined`.
 */
export function processedMarkKeys(store: object, client: RedisClientLike): ((key: string) => string) | undefined {
  const marks = marksOf.get(store);
  if (marks === undefined || marks.client !== client) return undefined;
  const { keyPrefix } = marks;
  return (key) => keyPrefix + key;
}
