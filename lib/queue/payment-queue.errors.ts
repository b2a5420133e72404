import { PaymentWebhookError, PaymentWebhookErrorCode } from '../webhooks/payment-webhook.errors.js';

/**
 * Queue mode could not hand the event to Redis within the time-out (Redis down, slow or
 * out of memory): 503, nothing was acknowledged, the service retries the delivery.
 */
export class WebhookQueueUnavailableError extends PaymentWebhookError {
  override readonly name = 'WebhookQueueUnavailableError';
  constructor(options?: { cause?: unknown }) {
    super(
      PaymentWebhookErrorCode.QUEUE_UNAVAILABLE,
      503,
      'The event queue is unavailable; the event was not accepted, retry later',
      options,
    );
  }
}

/**
 * An account uses `processing: 'queue'` but the optional peer `bullmq` (or `ioredis`,
 * which bullmq 6 needs) is not installed. Thrown at boot.
 * @publicApi
 */
export class BullMqMissingError extends Error {
  override readonly name = 'BullMqMissingError';
  readonly code = 'BULLMQ_NOT_INSTALLED';

  constructor(
    /** The packages that could not be found. */
    readonly missing: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(
      `processing: 'queue' needs the optional peer dependencies "bullmq" and "ioredis" ` +
        `(missing: ${missing.join(', ')}). Install them with \`npm i bullmq ioredis\`, or use processing: 'inline'.`,
      options,
    );
  }
}
