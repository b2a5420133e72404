import { withTimeout } from '../common/promise-timeout.util.js';
import { MIN_DEAD_LETTER_RETENTION_MS } from '../config/payment-options.schema.js';
import type { RedisClientLike } from '../stores/redis-client.js';
import { LUA_IS_PAYMENT_EVENT_JOB_ID } from './payment-event-job.js';

/*
 * Removal of dead letters past their own retention. Each job keeps the retention it was
 * queued with (`opts.paymentDeadLetterRetentionMs`, see `paymentEventJobOptions`), so no
 * instance may trim the failed set by its own setting, nor may BullMQ by the `removeOnFail`
 * age of whichever job failed last: jobs are queued with `removeOnFail: false` and removed here.
 */

/**
 * KEYS: the failed set. ARGV: job key prefix, now (epoch ms), retention of a job that has
 * none of its own (ms), rank to start at, most jobs to look at, `MIN_DEAD_LETTER_RETENTION_MS`,
 * the module's job id prefix (a failed job whose id is not of the module's shape is another producer's: never touched).
 * Walks the failed set oldest first (its score is the job's `finishedOn`) and removes a job,
 * as BullMQ's own removal does (its hash and sub-keys), only when its own `finishedOn` plus
 * its own retention is past: `opts.paymentDeadLetterRetentionMs`, else `opts.removeOnFail.age`
 * (seconds: jobs queued before retention was the module's), else ARGV[3].
 * Returns { removed, kept, done }: the next step starts at rank + kept (removed jobs left the
 * set); done once the walk met a job too young to have expired, or the end of the set.
 * Atomic, so a job replayed or discarded meanwhile is never touched.
 */
const TRIM_STEP_SCRIPT = `${LUA_IS_PAYMENT_EVENT_JOB_ID}
local rcall = redis.call
local now, fallback = tonumber(ARGV[2]), tonumber(ARGV[3])
local rank, limit, youngest, ours = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local entries = rcall('ZRANGE', KEYS[1], rank, rank + limit - 1, 'WITHSCORES')
local removed, kept = 0, 0
for i = 1, #entries, 2 do
  local id, score = entries[i], tonumber(entries[i + 1])
  if score + youngest >= now then return { removed, kept, 1 } end
  local key = ARGV[1] .. id
  local expired = false
  if isPaymentEventJobId(id, ours) then
    local job = rcall('HMGET', key, 'finishedOn', 'opts')
    local retention = fallback
    if job[2] then
      local ok, opts = pcall(cjson.decode, job[2])
      if ok and type(opts) == 'table' then
        local removeOnFail = opts['removeOnFail']
        if tonumber(opts['paymentDeadLetterRetentionMs']) then
          retention = tonumber(opts['paymentDeadLetterRetentionMs'])
        elseif type(removeOnFail) == 'table' and tonumber(removeOnFail['age']) then
          retention = tonumber(removeOnFail['age']) * 1000
        end
      end
    end
    expired = (tonumber(job[1]) or score) + retention < now
  end
  if expired then
    rcall('ZREM', KEYS[1], id)
    rcall('DEL', key, key .. ':logs', key .. ':dependencies', key .. ':processed', key .. ':failed', key .. ':unsuccessful')
    removed = removed + 1
  else
    kept = kept + 1
  end
end
return { removed, kept, #entries < limit * 2 and 1 or 0 }`;

/** Where one account's queue keeps its jobs (see `PaymentEventQueue`). */
export interface DeadLetterKeys {
  /** BullMQ's failed set of the queue (the dead letters). */
  failedKey: string;
  /** BullMQ's key of a job's hash, less the job id. */
  jobKeyPrefix: string;
}

export interface DeadLetterTrimOptions extends DeadLetterKeys {
  /** Retention of a failed job queued without one (by an early version of this module). */
  fallbackRetentionMs: number;
  /** Ids of the module's jobs start so (`evt-`); other failed jobs are another producer's, never removed. */
  jobIdPrefix: string;
  /** Jobs one Redis call looks at: bounds how long each call holds Redis. */
  batch: number;
  /** Calls per trim: bounds one trim; what it did not reach waits for the next. */
  maxBatches: number;
  /** Each call's time limit. */
  timeoutMs: number;
  /** Stops between calls when true (the queue is closing). */
  stopped?: () => boolean;
  /** @internal tests: the clock */
  now?: () => number;
}

/** Dead letters looked at per Redis call while trimming (each call holds Redis a few ms at most). */
export const DEAD_LETTER_TRIM_BATCH = 500;
/** Calls per trim (50,000 dead letters); the rest wait for the next trim. */
export const DEAD_LETTER_TRIM_MAX_BATCHES = 100;

/**
 * Removes the dead letters past their own retention, in steps of `batch` jobs; resolves the
 * number removed. Rejects with the Redis error (what was removed before it stays removed).
 */
export async function trimExpiredDeadLetters(redis: RedisClientLike, options: DeadLetterTrimOptions): Promise<number> {
  const now = options.now ?? Date.now;
  let rank = 0;
  let removed = 0;
  for (let step = 0; step < options.maxBatches && options.stopped?.() !== true; step++) {
    const answer = await withTimeout(
      redis.eval(
        TRIM_STEP_SCRIPT,
        1,
        options.failedKey,
        options.jobKeyPrefix,
        now(),
        options.fallbackRetentionMs,
        rank,
        options.batch,
        MIN_DEAD_LETTER_RETENTION_MS,
        options.jobIdPrefix,
      ),
      options.timeoutMs,
      () => new Error(`Redis did not answer within ${options.timeoutMs} ms`),
    );
    const [stepRemoved, kept, done] = answer as [number, number, number];
    removed += stepRemoved;
    // jobs replayed or discarded meanwhile shift the ranks: one skipped waits for the next trim
    rank += kept;
    if (done === 1) break;
  }
  return removed;
}
