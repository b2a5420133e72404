import { redactRedisUrl, redisErrorDescriber } from '../config/redact-url.js';
import type { PaymentHealthProbe } from '../health/payment-health.interface.js';
import { notReadyReason, type RedisClientLike, REDIS_HEALTH_KEY_TTL_MS, REDIS_HEALTH_WRITE_SCRIPT } from '../stores/redis-client.js';
import { PaymentWebhookErrorCode } from '../webhooks/payment-webhook.errors.js';

const queueUnavailable = (message: string): Error => Object.assign(new Error(message), { code: PaymentWebhookErrorCode.QUEUE_UNAVAILABLE });

/**
 * The `queue` probe of an account in queue mode: writes `<redisKeyPrefix><account>:health:queue`
 * (expiring soon) on the connection its queue writes with (details: the queue's URL without
 * its password). The queue may have a Redis of its own (`queueRedisUrl`), whose outage the
 * `store` probe would not see.
 */
export function queueRedisProbe(
  account: string,
  connection: RedisClientLike,
  queueRedisUrl: string,
  timeoutMs: number,
  redisKeyPrefix: string,
): PaymentHealthProbe {
  const describe = redisErrorDescriber(queueRedisUrl);
  const key = `${redisKeyPrefix}${account}:health:queue`;
  return {
    account,
    component: 'queue',
    details: { url: redactRedisUrl(queueRedisUrl) },
    check: async () => {
      // like the store's probe and BullMQ itself, a first connection under way is waited for
      const reason = await notReadyReason(connection, timeoutMs, describe);
      if (reason !== undefined) throw queueUnavailable(reason);
      try {
        await connection.eval(REDIS_HEALTH_WRITE_SCRIPT, 1, key, REDIS_HEALTH_KEY_TTL_MS);
      } catch (error) {
        // the reason only (ioredis' errors carry their command)
        throw queueUnavailable(`the health write to Redis failed: ${describe(error)}`);
      }
    },
  };
}
