import type { WebhookClaimResult } from './webhook-event-store.interface.js';

// Store methods are called by our interceptor and by users' own code: a bad
// argument is a programming error, reported at once instead of stored.

export function assertKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError('WebhookEventStore: key must be a non-empty string');
  }
}

export function assertToken(token: unknown): asserts token is string {
  if (typeof token !== 'string' || token.length === 0) {
    throw new TypeError('WebhookEventStore: claimToken must be a non-empty string');
  }
}

export function assertDuration(name: string, ms: unknown): asserts ms is number {
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 1) {
    throw new RangeError(`WebhookEventStore: ${name} must be a positive integer of milliseconds, got ${String(ms)}`);
  }
}

/**
 * A claim result the module can act on. A custom store's other answer (`SET NX`'s boolean, a
 * claim without its token, an outcome of its own) must run nothing: read as "claimed", every
 * copy of an event would run its handlers.
 */
export function assertClaimResult(result: unknown): asserts result is WebhookClaimResult {
  const { outcome, claimToken } = (typeof result === 'object' && result !== null ? result : {}) as { outcome?: unknown; claimToken?: unknown };
  if (outcome === 'processed' || outcome === 'in-flight' || (outcome === 'claimed' && typeof claimToken === 'string' && claimToken !== '')) return;
  const given = typeof result !== 'object' || result === null ? String(result) : outcome === 'claimed' ? "{ outcome: 'claimed' } without a claimToken string" : `an object with outcome ${typeof outcome === 'string' ? JSON.stringify(outcome) : typeof outcome}`;
  throw new TypeError(
    `WebhookEventStore: claim() resolved ${given}, not { outcome: 'claimed', claimToken } | { outcome: 'processed' } | { outcome: 'in-flight' }: nothing ran`,
  );
}
