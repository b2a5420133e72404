import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RedisClientLike, untilFirstConnected } from '../stores/redis-client.js';
import { redisErrorDescriber } from '../config/redact-url.js';
import { PaymentDeadLetterBusyError, PaymentQueueUnavailableError } from './payment-queue.errors.js';

/**
 * A replay or discard takes a few round trips; its lock lapses after this if its holder died,
 * or after five Redis time-outs where those are longer: a lock must outlive a slow action.
 */
const DEAD_LETTER_LOCK_MS = 30_000;
const DEAD_LETTER_LOCK_REDIS_TIMEOUTS = 5;
/** How long a replay or discard waits for another one of the same dead letter. */
const DEAD_LETTER_LOCK_WAIT_MS = 10_000;
// 'OK' when taken, or already held with this token (the reply of an earlier send was lost and
// ioredis sent the command again on the new connection)
const ACQUIRE_LOCK_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'OK' end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 'OK'
end
return false`;
const RELEASE_LOCK_SCRIPT = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/** Where and how long one account's dead-letter locks are held. */
export interface DeadLetterLockSettings {
  account: string;
  redisKeyPrefix: string;
  redisTimeoutMs: number;
  /** The queue's Redis URL: its secrets are left out of a failure's reason. */
  queueRedisUrl?: string;
}

/**
 * Runs `action` (a replay or discard of `eventId`'s dead letter) holding a lock in the queue's
 * Redis (`<redisKeyPrefix><account>:dead-letter-lock:<eventId>`): each checks that the job is
 * failed and then acts, and interleaved, in any two instances, a discard could remove the job a
 * replay had just put back in the queue (the event gone while replay said `true`).
 */
export async function withDeadLetterLock<T>(
  connection: RedisClientLike,
  settings: DeadLetterLockSettings,
  eventId: string,
  action: () => Promise<T>,
): Promise<T> {
  try {
    return await runLocked(connection, settings, eventId, action);
  } catch (error) {
    // A Redis error (a write refused READONLY after a failover, a connection being remade) is
    // the documented PaymentQueueUnavailableError, never ioredis' own: an admin route answers 503
    if (error instanceof PaymentDeadLetterBusyError || error instanceof PaymentQueueUnavailableError) throw error;
    throw new PaymentQueueUnavailableError(settings.account, redisErrorDescriber(settings.queueRedisUrl ?? '')(error));
  }
}

async function runLocked<T>(connection: RedisClientLike, settings: DeadLetterLockSettings, eventId: string, action: () => Promise<T>): Promise<T> {
  const { account, redisKeyPrefix, redisTimeoutMs } = settings;
  const key = `${redisKeyPrefix}${account}:dead-letter-lock:${eventId}`;
  const token = randomUUID();
  const deadline = Date.now() + DEAD_LETTER_LOCK_WAIT_MS;
  await untilFirstConnected(connection, redisTimeoutMs);
  const lockMs = Math.max(DEAD_LETTER_LOCK_MS, DEAD_LETTER_LOCK_REDIS_TIMEOUTS * redisTimeoutMs);
  while ((await connection.eval(ACQUIRE_LOCK_SCRIPT, 1, key, token, lockMs)) !== 'OK') {
    if (Date.now() > deadline) {
      throw new PaymentDeadLetterBusyError(account, eventId);
    }
    await sleep(20);
  }
  try {
    return await action();
  } finally {
    await connection.eval(RELEASE_LOCK_SCRIPT, 1, key, token).catch(() => undefined); // else it lapses
  }
}
