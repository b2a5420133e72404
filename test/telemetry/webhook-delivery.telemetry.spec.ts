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

  it('says a warning a replayed delivery repeats (a copy in flight, the other environment, a signed bad envelope) at most 10 times a minute per kind, then with the count of those at debug', async () => {
    const { jest } = await import('@jest/globals');
    const { WebhookEventInFlightError, WebhookInvalidEnvelopeError } = await import('../../lib/webhooks/payment-webhook.errors.js');
    jest.useFakeTimers();
    try {
      const logger = new CollectingLogger();
      const telemetry = new WebhookDeliveryTelemetry('eu', logger);
      const inFlight = () => telemetry.failed(event, new PaymentWebhookHttpException(new WebhookEventInFlightError()), performance.now());
      for (let i = 0; i < 14; i++) inFlight();
      for (let i = 0; i < 3; i++) telemetry.ignoredOtherEnvironment('Ignored payment.succeeded event evt_1');
      telemetry.rejected(new PaymentWebhookHttpException(new WebhookInvalidEnvelopeError({ eventType: ['must be a string'] })), performance.now());
      jest.advanceTimersByTime(59_000);
      inFlight();
      jest.advanceTimersByTime(1_000);
      inFlight();
      const warnings = logger.messages('warn');
      expect(warnings.filter((m) => m.includes('in_flight'))).toEqual([
        ...Array.from({ length: 10 }, () => expect.stringMatching(/^Webhook delivery in_flight, answered 409 WEBHOOK_EVENT_IN_FLIGHT: eventId=evt_1 .*retry later$/)),
        expect.stringMatching(/retry later \(5 more like it before this were logged at debug: a replayed delivery repeats them, so at most 10 a minute at warn\)$/),
      ]);
      expect(warnings.filter((m) => m.startsWith('Ignored'))).toEqual(Array.from({ length: 3 }, () => 'Ignored payment.succeeded event evt_1'));
      expect(warnings.filter((m) => m.includes('WEBHOOK_INVALID_ENVELOPE'))).toHaveLength(1);
      expect(logger.messages('debug')).toHaveLength(5);
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
