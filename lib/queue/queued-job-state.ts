// What a delivery finds in the queue: the one read that decides whether an event is added, a copy
// of it acknowledged `queued` or `duplicate`, answered 409, or replays a dead letter (see
// `PaymentEventQueue.write`).
import { PROCESSED_VALUE } from '../stores/redis-processed-mark.js';

// A plain enum: ts-jest's isolatedModules cannot inline a const enum from another file.

/** What `JOB_STATE_SCRIPT` says about the event's job. */
export enum MetJob {
  /** Queued by this delivery, or one whose state leaves nothing to do (waiting with attempts to spare, finished). */
  Other = 0,
  /** In the failed set: a dead letter. */
  DeadLetter = 1,
  /** Not this delivery's, unfinished, and its running or next attempt is its last. */
  OnLastAttempt = 2,
  /** No job: a new event (or one whose job went: completed, discarded or trimmed). */
  NoJob = 3,
  /** The event store marks the event processed (read only where the store shares the queue's connection). */
  Processed = 4,
}

/**
 * KEYS: the failed set, the job's hash, and the event's processed mark in the event store when the
 * store is on this connection; ARGV: job id, this delivery's mark (unique: two copies in
 * one millisecond, on two instances, are told apart), this instance's `queueAttempts` and
 * `queueMaxStalledCount`. The job was queued by this delivery when its `opts.paymentDeliveryId` is
 * the mark; such a job is this delivery's to acknowledge whatever became of it since (a dead letter
 * already, it was alerted as any). Reads BullMQ's job fields `atm` (attempts made), `finishedOn`, `opts`, `stc` (times
 * found stalled) and `defa` (a failure BullMQ applies, unrun, at its next take). The last attempt
 * is the job's own (`opts.attempts`, fixed when it was queued): instances of a rolling deploy may
 * disagree on `queueAttempts`; this instance's only for a job without one. A job taken over more
 * than `queueMaxStalledCount` times is a dead letter at its next run unless a run still holds its
 * event: its copy is answered as one on its last attempt.
 */
export const JOB_STATE_SCRIPT = `if KEYS[3] and redis.call('GET', KEYS[3]) == '${PROCESSED_VALUE}' then return ${MetJob.Processed} end
local job = redis.call('HMGET', KEYS[2], 'atm', 'finishedOn', 'opts', 'stc', 'defa')
local opts
if job[3] then
  local ok, decoded = pcall(cjson.decode, job[3])
  if ok and type(decoded) == 'table' then opts = decoded end
end
if opts and ARGV[2] ~= '' and opts['paymentDeliveryId'] == ARGV[2] then return ${MetJob.Other} end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return ${MetJob.DeadLetter} end
if not job[3] then return ${MetJob.NoJob} end
if job[2] then return ${MetJob.Other} end
local attempts = tonumber(ARGV[3])
if opts and tonumber(opts['attempts']) then attempts = tonumber(opts['attempts']) end
if job[5] or tonumber(job[4] or '0') > tonumber(ARGV[4]) then return ${MetJob.OnLastAttempt} end
if tonumber(job[1] or '0') + 1 >= attempts then return ${MetJob.OnLastAttempt} end
return ${MetJob.Other}`;
