/** How one key is claimed, remembered and kept alive (by `WebhookDeduplicator`). */
export interface WebhookDeduplicationSettings {
  /** How long one delivery may hold the key before another may take it over. */
  leaseMs: number;
  /** How long a processed key is remembered. */
  retentionMs: number;
  /**
   * Attempts at recording completion before giving up (see `recordCompletion`). `Infinity`
   * (the queue worker) retries until the store answers or the deduplicator is closed.
   */
  completeAttempts: number;
  /** Renewal of a running claim stops after this long. */
  maxLeaseRenewalMs: number;
  /**
   * Longest wait for one `complete()` call: a store that never answers counts as a failed
   * attempt. Unset (the route: its request has the sender's own time-out), no timer per delivery.
   */
  completeTimeoutMs?: number;
}

/** Renewal of a running claim stops after 15 minutes, so a hung handler cannot block its event for good. */
export const DEFAULT_MAX_LEASE_RENEWAL_MS = 15 * 60 * 1000;

/** Attempts at recording completion before answering anyway (a retry would run the work again). */
export const DEFAULT_COMPLETE_ATTEMPTS = 3;

/** An account's deduplication: its lease and retention, the defaults for the rest (the queue worker renews without limit). */
export function accountDeduplicationSettings(options: {
  webhookLeaseMs: number;
  webhookRetentionMs: number;
}): WebhookDeduplicationSettings {
  return {
    leaseMs: options.webhookLeaseMs,
    retentionMs: options.webhookRetentionMs,
    completeAttempts: DEFAULT_COMPLETE_ATTEMPTS,
    maxLeaseRenewalMs: DEFAULT_MAX_LEASE_RENEWAL_MS,
  };
}

/**
 * Thrown by work that ended while what it started may still run (a timeout inside the idempotency
 * interceptor cut the handler's observable, not the handler): its claim is neither released (a copy
 * would run it beside the first) nor completed (it may yet fail), and lapses with its lease.
 */
export class WorkOutcomeUnknown {
  constructor(readonly error: unknown) {}
}
