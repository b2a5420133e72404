/** Result of trying to claim an event id before its handlers run. @publicApi */
export type WebhookClaimResult =
  /** This caller owns the event now and must `complete` or `release` it. */
  | { outcome: 'claimed'; claimToken: string }
  /** The event was handled before: answer 2xx without running handlers. */
  | { outcome: 'processed' }
  /** Another delivery holds a live lease: answer non-2xx so the service retries later. */
  | { outcome: 'in-flight' };

/**
 * Where processed webhook event ids are remembered. Implementations must make
 * `claim` atomic across every process that shares the store.
 * @publicApi
 */
export interface WebhookEventStore {
  /** Claims `key` for `leaseMs`. An expired lease may be claimed again. */
  claim(key: string, leaseMs: number): Promise<WebhookClaimResult>;
  /** Marks `key` processed for `retentionMs`, only if `claimToken` still owns it. */
  complete(key: string, claimToken: string, retentionMs: number): Promise<void>;
  /** Drops the claim so the next delivery runs the handlers, only if `claimToken` still owns it. */
  release(key: string, claimToken: string): Promise<void>;
  /**
   * Optional: renews the claim for another `leaseMs` if `claimToken` still owns it, or takes the
   * key back for `claimToken` when it is free (the lease lapsed and nobody claimed it since).
   * Resolves `false` when another holds it or it is processed. Called while handlers run, so a
   * slow handler (or one paused past its lease) keeps its event and copies still get 409.
   */
  extend?(key: string, claimToken: string, leaseMs: number): Promise<boolean>;
  /**
   * Optional: one round trip to what backs the store, for health checks; rejects when it
   * cannot be reached (best a small write: a backend that refuses writes refuses claims too).
   * A store without it is reported up.
   */
  ping?(): Promise<unknown>;
  /**
   * Optional: whether `key` is recorded as processed, without claiming it (a live claim is
   * not processed). Queue mode reads it to answer a copy of a handled event as a duplicate
   * before queueing it; without it such copies are queued and the worker drops them.
   */
  isProcessed?(key: string): Promise<boolean>;
  /**
   * Optional: close connections. The module calls it at shutdown only on stores it built; a
   * store passed in `forRoot({ store })` is left open for its owner to close.
   */
  close?(): Promise<void>;
}

/** Injection token of the store; same name as the interface, as Nest's throttler does. @publicApi */
export const WebhookEventStore = Symbol('WebhookEventStore');
