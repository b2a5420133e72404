import type { PaymentClientOperation } from '../telemetry/payment-telemetry.names.js';
import type { RateLimitScope } from './payment-rate-limiter.js';
import type { RetryPolicy } from './payment-retry.policy.js';

// What the client's operations hand the request executor, and what it answers.

export type TokenMode = 'cached' | 'fresh' | 'none';

export interface ServiceCall {
  method: string;
  /** Path under the API base, filled in and encoded. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** How `body` is written. @default 'json' */
  encoding?: 'json' | 'form';
  auth: TokenMode;
  limit: RateLimitScope;
  retry: RetryPolicy;
  /** Copied onto errors of payment creation. */
  idempotencyKey?: string;
  /** Name of the call in metrics and spans. @default 'request' */
  operation?: PaymentClientOperation;
  /** Gives the call up while it waits (never once an attempt is on the wire). */
  signal?: AbortSignal;
}

export interface ServiceAnswer {
  status: number;
  body: unknown;
  /** `data` of the success envelope (the body itself when it has no `data`). */
  data: unknown;
  /** Clock time the answered attempt was sent (after any wait for its slot or token). */
  sentAt: number;
}
