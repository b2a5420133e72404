// What a delivery's add met in the queue: the one read that decides whether a copy of an event is
// acknowledged `queued`, answered 409, or replays a dead letter (see `PaymentEventQueue.write`).
// A plain enum: ts-jest's isolatedModules cannot inline a const enum from another file.

/** What `JOB_STATE_SCRIPT` says about the job a delivery's add met. */
export enum MetJob {
  /** New, or one whose state leaves nothing to do (waiting with attempts to spare, finished). */
  Other = 0,
  /** In the failed set: a dead letter. */
  DeadLetter = 1,
  /** Not this delivery's, unfinished, and its running or next attempt is its last. */
  OnLastAttempt = 2,
}

/**
 * KEYS: the failed set, the job's hash; ARGV: job id, this delivery's job timestamp, this
 * instance's `queueAttempts`. Reads BullMQ's job fields `timestamp`, `atm` (attempts made),
 * `finishedOn` and `opts`. A job whose timestamp is this delivery's was created by it. The
 * last attempt is the job's own (`opts.attempts`, fixed when it was queued): instances of a
 * rolling deploy may disagree on `queueAttempts`; this instance's only for a job without one.
 */
export const JOB_STATE_SCRIPT = `if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return ${MetJob.DeadLetter} end
local job = redis.call('HMGET', KEYS[2], 'timestamp', 'atm', 'finishedOn', 'opts')
if not job[1] or job[1] == ARGV[2] or job[3] then return ${MetJob.Other} end
local attempts = tonumber(ARGV[3])
if job[4] then
  local ok, opts = pcall(cjson.decode, job[4])
  if ok and type(opts) == 'table' and tonumber(opts['attempts']) then attempts = tonumber(opts['attempts']) end
end
if tonumber(job[2] or '0') + 1 >= attempts then return ${MetJob.OnLastAttempt} end
return ${MetJob.Other}`;
