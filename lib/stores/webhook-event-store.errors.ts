/**
 * The store could not answer (Redis down, timed out, or the store was closed).
 * The webhook route maps it to 503 so the service retries the delivery later:
 * an event is never acknowledged when we could not record it.
 * @publicApi
 */
export class WebhookStoreUnavailableError extends Error {
  readonly code = 'WEBHOOK_STORE_UNAVAILABLE';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebhookStoreUnavailableError';
  }
}

/** `RedisWebhookEventStore` was asked to connect but the optional `ioredis` package is not installed. @publicApi */
export class RedisClientMissingError extends Error {
  readonly code = 'IOREDIS_NOT_INSTALLED';

  constructor(options?: { cause?: unknown }) {
    super(
      'RedisWebhookEventStore needs the optional peer dependency "ioredis" to connect by URL (a redisUrl option or ' +
        'PAYMENT_*REDIS_URL variable, or a URL given to the store). Install it with `npm i ioredis`, or give the store a client of your own.',
      options,
    );
    this.name = 'RedisClientMissingError';
  }
}
