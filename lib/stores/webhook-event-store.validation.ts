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
