import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { REDIS_CLOSE_GRACE_MS, reconnectAndResendOnReadOnly } from '../stores/redis-client.js';
import type { BullJobOptions } from './bullmq.loader.js';

/*
 * Where an account's queue lives in Redis and how its jobs are retried, derived from the
 * account's resolved options. Shared by the producer, the worker and the dead-letter service.
 */

/** Random share taken off each backoff delay, so failed events do not all retry at the same instant. */
const BACKOFF_JITTER = 0.2;
/** Completed jobs kept for inspection; the event store, not the queue, remembers processed events. */
const KEEP_COMPLETED = { age: 3600, count: 1000 };
/** Error stacks kept per job (one per failed attempt), newest last. */
const STACK_TRACE_LIMIT = 5;

export interface PaymentQueueLayout {
  /** Queue name: the account name (account names never contain ':'). */
  name: string;
  /**
   * BullMQ key prefix: `<redisKeyPrefix>_queue` (`payment-gateway:sandbox:_queue`). No account
   * name starts with '_', so these keys never meet the event store's `<prefix><account>:…`.
   */
  prefix: string;
}

export function paymentQueueLayout(options: ResolvedPaymentOptions): PaymentQueueLayout {
  return { name: options.account, prefix: `${options.redisKeyPrefix}_queue` };
}

/** Options of every job of the account (fixed when the job is added). */
export function paymentEventJobOptions(options: ResolvedPaymentOptions): BullJobOptions {
  return {
    attempts: options.queueAttempts,
    backoff: { type: 'exponential', delay: options.queueBackoffMs, jitter: BACKOFF_JITTER },
    removeOnComplete: KEEP_COMPLETED,
    // Never BullMQ's removal: it would trim every failed job by the age of whichever job failed
    // last. Each dead letter keeps the retention it was queued with, and the queue's trim
    // removes it by that (see dead-letter-trim.ts).
    removeOnFail: false,
    paymentDeadLetterRetentionMs: options.queueDeadLetterRetentionMs,
    stackTraceLimit: STACK_TRACE_LIMIT,
  };
}

/**
 * The least time in which a job of this account's settings can go from queued to a dead letter:
 * its retries' shortest backoffs (jitter taken off), or, were its workers to die, one lock for
 * the first take-over (a job found stalled too often fails at its next run), whichever is less.
 */
export function fastestDeadLetterMs(options: ResolvedPaymentOptions): number {
  let backoffs = 0;
  for (let retry = 1; retry < options.queueAttempts && backoffs < options.queueLockDurationMs; retry++) {
    backoffs += Math.floor(2 ** (retry - 1) * options.queueBackoffMs * (1 - BACKOFF_JITTER));
  }
  return Math.min(backoffs, options.queueLockDurationMs);
}

/** BullMQ's own stall limit, out of reach: `queueMaxStalledCount` is the worker's to apply. */
const BULLMQ_MAX_STALLED_COUNT = 1_000_000;

/**
 * Options of the account's BullMQ worker. The stalled-job check runs every half lock, so a
 * job whose worker died is taken over 1 to 1.5 locks after its last renewal. BullMQ makes
 * the worker's own connections from the URL (its blocking one needs `maxRetriesPerRequest:
 * null`, which the fail-fast producer connection must not have).
 */
export function paymentWorkerOptions(options: ResolvedPaymentOptions): Record<string, unknown> {
  const lockDuration = options.queueLockDurationMs;
  return {
    prefix: paymentQueueLayout(options).prefix,
    connection: {
      url: options.queueRedisUrl,
      // reconnect quickly after an outage (BullMQ's default backs off to 20 s)
      retryStrategy: (times: number) => Math.min(times * 500, 5000),
      // after a failover behind one endpoint, reach the new primary (and send it the refused write)
      reconnectOnError: reconnectAndResendOnReadOnly,
      // a closing socket that does not end (a refused password, an outage) holds the process for 2 s by default
      disconnectTimeout: REDIS_CLOSE_GRACE_MS,
    },
    concurrency: options.queueConcurrency,
    lockDuration,
    stalledInterval: Math.max(500, Math.floor(lockDuration / 2)),
    // BullMQ would fail a job found stalled once too often when a worker next takes it, unrun and
    // without asking the store, though a frozen worker may still be running it and go on to
    // finish it (a dead letter of a handled event). The worker enforces queueMaxStalledCount
    // itself once it holds the event's claim (see `stalledTooOftenError`).
    maxStalledCount: BULLMQ_MAX_STALLED_COUNT,
    // wait after a Redis error before the worker's loop tries again (BullMQ's default is 15 s)
    runRetryDelay: 2000,
    // Seconds an idle worker's blocking wait for jobs lasts (a new job ends it at once; while a
    // retry waits in backoff, the wait lasts until it is due, at most 10 s). BullMQ guards each
    // wait with a timer of that plus 1 s, and with Redis down at app.close() the wait never
    // settles (ioredis keeps it for a reconnect the close cancels), so that timer holds the
    // process: 2 s when idle instead of 6. The cost: one wait and one fetch a second when idle.
    drainDelay: 1,
  };
}
