import { withTimeout } from '../common/promise-timeout.util.js';
import type { RedisClientLike } from '../stores/redis-client.js';

/*
 * Paging over dead letters. The failed set of an account's queue may hold jobs that are no
 * dead letters (another producer's, which stay failed for their owner; a later release's
 * layout): a page taken from the set as it is would count them in `offset` and `limit`, and
 * come back short or empty while dead letters exist. So the page is chosen among this
 * module's jobs only, in Redis, without reading their payloads back.
 */

/** Failed jobs one Redis call looks at: bounds how long each call holds Redis (a JSON decode each). */
const LISTING_STEP = 200;

/**
 * KEYS: the failed set. ARGV: job key prefix, rank to start at, jobs to look at. Returns
 * { jobs looked at, ...ids of those that are this module's event jobs }, newest first: the
 * ones whose data has layout 1 and a string `eventId` (what `isPaymentEventJob` reads).
 */
const LISTING_STEP_SCRIPT = `local ids = redis.call('ZREVRANGE', KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[2]) + tonumber(ARGV[3]) - 1)
local found = { #ids }
for _, id in ipairs(ids) do
  local data = redis.call('HGET', ARGV[1] .. id, 'data')
  if data then
    local ok, job = pcall(cjson.decode, data)
    if ok and type(job) == 'table' and job['v'] == 1 and type(job['event']) == 'table' and type(job['event']['eventId']) == 'string' then
      found[#found + 1] = id
    end
  end
end
return found`;

export interface DeadLetterPageOptions {
  /** BullMQ's failed set of the queue. */
  failedKey: string;
  /** BullMQ's key of a job's hash, less the job id. */
  jobKeyPrefix: string;
  /** Dead letters skipped from the newest (other failed jobs are not counted). */
  offset: number;
  /** Most job ids returned. */
  limit: number;
  /** Each call's time limit. */
  timeoutMs: number;
}

/** Job ids of one page of dead letters, newest first: `offset` of them skipped, at most `limit`. */
export async function deadLetterPage(redis: RedisClientLike, options: DeadLetterPageOptions): Promise<string[]> {
  const page: string[] = [];
  let toSkip = options.offset;
  for (let rank = 0; page.length < options.limit; rank += LISTING_STEP) {
    const answer = await withTimeout(
      redis.eval(LISTING_STEP_SCRIPT, 1, options.failedKey, options.jobKeyPrefix, rank, LISTING_STEP),
      options.timeoutMs,
      () => new Error(`Redis did not answer within ${options.timeoutMs} ms`),
    );
    const [lookedAt, ...ids] = answer as [number, ...string[]];
    const skipped = Math.min(toSkip, ids.length);
    toSkip -= skipped;
    page.push(...ids.slice(skipped, skipped + options.limit - page.length));
    if (lookedAt < LISTING_STEP) break;
  }
  return page;
}
