import type { RedisClientLike } from '../stores/redis-client.js';
import { LUA_IS_PAYMENT_EVENT_JOB_ID, PAYMENT_EVENT_JOB_ID_PREFIX } from './payment-event-job.js';

/*
 * Paging over dead letters. The failed set of an account's queue may hold jobs that are no
 * dead letters (another producer's, which stay failed for their owner): a page taken from the
 * set as it is would count them in `offset` and `limit`, and come back short or empty while dead
 * letters exist. So the page is chosen among the ids this module gives its jobs, in Redis;
 * the caller reads those jobs and checks their layout.
 */

/** Failed-set entries one Redis call looks at (ids only: a call holds Redis well under a millisecond). */
const LISTING_STEP = 1000;

/**
 * KEYS: the failed set. ARGV: rank to start at, entries to look at, job id prefix. Returns
 * { entries looked at, ...ids of the module's shape }, newest first.
 */
const LISTING_STEP_SCRIPT = `${LUA_IS_PAYMENT_EVENT_JOB_ID}
local ids = redis.call('ZREVRANGE', KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1)
local found = { #ids }
for _, id in ipairs(ids) do
  if isPaymentEventJobId(id, ARGV[3]) then found[#found + 1] = id end
end
return found`;

export interface DeadLetterPageOptions {
  /** BullMQ's failed set of the queue. */
  failedKey: string;
  /** Dead letters skipped from the newest (other failed jobs are not counted). */
  offset: number;
  /** Most job ids returned. */
  limit: number;
  /** @internal tests: entries per call */
  step?: number;
}

/**
 * Job ids of one page of dead letters, newest first: `offset` of them skipped, at most `limit`
 * (the caller bounds the whole walk in time).
 * A failure recorded between two calls shifts the ranks by one, so an id may come twice (counted
 * once, skipped or taken); a job removed meanwhile may let one go unseen until the next listing.
 */
export async function deadLetterPage(redis: RedisClientLike, options: DeadLetterPageOptions): Promise<string[]> {
  const step = options.step ?? LISTING_STEP;
  const page: string[] = [];
  const seen = new Set<string>();
  let toSkip = options.offset;
  for (let rank = 0; page.length < options.limit; rank += step) {
    const answer = await redis.eval(LISTING_STEP_SCRIPT, 1, options.failedKey, rank, step, PAYMENT_EVENT_JOB_ID_PREFIX);
    const [lookedAt, ...ids] = answer as [number, ...string[]];
    for (const id of ids) {
      if (seen.has(id)) continue; // skipped or taken already
      seen.add(id);
      if (toSkip > 0) toSkip--;
      else if (page.length < options.limit) page.push(id);
    }
    if (lookedAt < step) break;
  }
  return page;
}
