import { WebhookQueueUnavailableError } from '../../lib/queue/payment-queue.errors.js';
import { WebhookStoreUnavailableResponseError } from '../../lib/webhooks/payment-webhook.errors.js';
import { PaymentWebhookHttpException } from '../../lib/webhooks/payment-webhook-http.exception.js';
import { WebhookDeliveryTelemetry } from '../../lib/telemetry/webhook-delivery.telemetry.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { CollectingLogger } from '../support/collecting-logger.js';

describe('WebhookDeliveryTelemetry log lines', () => {
  const event = { eventId: 'evt_1', eventType: 'payment.succeeded' } as AnyPaymentEvent;
  const storeUrl = 'redis://:store-pa55@store.internal:6379';
  // the queue may live on another Redis than the store: its password was left in the line
  const queueUrl = 'rediss://worker:queue-pa55@queue.internal:6380/2';

  it.each([
    ['the store', new WebhookStoreUnavailableResponseError({ cause: new Error(`connect to ${storeUrl} failed (store-pa55)`) })],
    ['the queue', new WebhookQueueUnavailableError({ cause: new Error(`connect to ${queueUrl} failed (queue-pa55)`) })],
  ])('a 503 for %s logs its reason without either Redis password', (_what, error) => {
    const logger = new CollectingLogger();
    const telemetry = new WebhookDeliveryTelemetry('default', logger, [storeUrl, queueUrl]);
    telemetry.failed(event, new PaymentWebhookHttpException(error), performance.now());
    const [line] = logger.messages('error');
    expect(line).toContain('eventId=evt_1');
    expect(line).toContain('failed');
    expect(line).not.toMatch(/store-pa55|queue-pa55/);
  });

  it('counts bad signatures in one warn at the first, then at most once an hour', async () => {
    const { jest } = await import('@jest/globals');
    const { WebhookSignatureMismatchError } = await import('../../lib/webhooks/payment-webhook.errors.js');
    jest.useFakeTimers();
    try {
      const logger = new CollectingLogger();
      const telemetry = new WebhookDeliveryTelemetry('eu', logger);
      const mismatch = () => telemetry.rejected(new PaymentWebhookHttpException(new WebhookSignatureMismatchError()), performance.now());
      for (let i = 0; i < 5; i++) mismatch();
      jest.advanceTimersByTime(3_600_000);
      mismatch();
      const warnings = logger.messages('warn');
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toMatch(/^Webhook deliveries to account eu fail the signature check \(1 since start; .*\(option webhookSecret or PAYMENT_EU_WEBHOOK_SECRET\)/);
      expect(warnings[1]).toMatch(/^Webhook deliveries to account eu fail the signature check \(5 in the last hour; /);
      expect(logger.messages('debug')).toHaveLength(6);
    } finally {
      jest.useRealTimers();
    }
  });

  it('counts signed deliveries outside the replay window the same way, apart from bad signatures: a skewed clock must not go unsaid', async () => {
    const { jest } = await import('@jest/globals');
    const { WebhookSignatureMismatchError, WebhookTimestampOutOfToleranceError } = await import('../../lib/webhooks/payment-webhook.errors.js');
    jest.useFakeTimers();
    try {
      const logger = new CollectingLogger();
      const telemetry = new WebhookDeliveryTelemetry('eu', logger);
      const stale = () => telemetry.rejected(new PaymentWebhookHttpException(new WebhookTimestampOutOfToleranceError(1, 300)), performance.now());
      for (let i = 0; i < 3; i++) stale();
      telemetry.rejected(new PaymentWebhookHttpException(new WebhookSignatureMismatchError()), performance.now());
      jest.advanceTimersByTime(3_600_000);
      stale();
      expect(logger.messages('warn')).toEqual([
        expect.stringMatching(/^Webhook deliveries to account eu are signed but outside the replay window \(1 since start; .*PAYMENT_EU_WEBHOOK_TOLERANCE_SECONDS/),
        expect.stringMatching(/^Webhook deliveries to account eu fail the signature check \(1 since start; /),
        expect.stringMatching(/^Webhook deliveries to account eu are signed but outside the replay window \(3 in the last hour; /),
      ]);
      expect(logger.messages('debug')).toHaveLength(5);
    } finally {
      jest.useRealTimers();
    }
  });
});
