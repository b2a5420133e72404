import { redactRedisUrl } from '../config/redact-url.js';
import type { PaymentHealthProbe } from '../health/payment-health.interface.js';
import { type RedisClientLike, untilFirstConnected } from '../stores/redis-client.js';
import { PaymentWebhookErrorCode } from '../webhooks/payment-webhook.errors.js';

/**
 * The `queue` probe of an account in queue mode: a round trip on the connection its queue
 * writes with (details: the queue's URL without its password). The queue may have a Redis of
 * its own (`queueRedisUrl`), whose outage the `store` probe would not see.
 */
export function queueRedisProbe(account: string, connection: RedisClientLike, queueRedisUrl: string, timeoutMs: number): PaymentHealthProbe {
  return {
    account,
    component: 'queue',
    details: { url: redactRedisUrl(queueRedisUrl) },
    check: async () => {
      // like the store's probe and BullMQ itself, the first connection is waited for
      await untilFirstConnected(connection, timeoutMs);
      if (connection.status !== 'ready') {
        throw Object.assign(new Error(`Redis is not connected (status: ${connection.status})`), { code: PaymentWebhookErrorCode.QUEUE_UNAVAILABLE });
      }
      await connection.eval('return 1', 0);
    },
  };
}
