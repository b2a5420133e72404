import type { PaymentEventEnvelope } from '../events/payment-event.types.js';

/**
 * An event whose handlers failed on every attempt in queue mode. It is kept, payload
 * included, until it is replayed, discarded, or older than the `queueDeadLetterRetentionMs`
 * it was queued with.
 * @publicApi
 */
export interface PaymentDeadLetter {
  /** The merchant account that received the event. */
  account: string;
  eventId: string;
  eventType: string;
  /** The verified webhook body as received (without the fields the module sets). */
  event: PaymentEventEnvelope;
  /** Attempts made, the first run included. */
  attempts: number;
  /** Message of the error of the last attempt. */
  lastError: string;
  /** When the webhook route accepted the event. */
  receivedAt: Date;
  /** When the last attempt failed. */
  failedAt: Date;
  /**
   * End of its retention (the one it was queued with, whatever the instances' setting is now):
   * the queue's hourly trim removes it after this, unless replayed or discarded before.
   */
  expiresAt: Date;
}

/** Which dead letters `PaymentDeadLetterService.list()` returns, newest first. @publicApi */
export interface PaymentDeadLetterListOptions {
  /** The merchant account. @default 'default' */
  account?: string;
  /** Dead letters skipped from the newest. @default 0 */
  offset?: number;
  /** Most dead letters returned, 1 to 1000. @default 50 */
  limit?: number;
}
