import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { SANDBOX_CLIENT } from '../support/client-simulator.js';
import { ClientStubServer, success } from '../support/client-stub-server.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

/** A handler that sends a refund (to a slow service) before it returns. */
@Injectable()
class CallingHandler {
  readonly entered = new Map<string, number>();
  readonly done = new Map<string, number>();

  constructor(private readonly client: PaymentGatewayService) {}

  @OnPaymentEvent('payment.succeeded')
  async handle(event: AnyPaymentEvent): Promise<void> {
    this.entered.set(event.eventId, (this.entered.get(event.eventId) ?? 0) + 1);
    await this.client.refundPayment('trx_1', { amount: '1' });
    this.done.set(event.eventId, (this.done.get(event.eventId) ?? 0) + 1);
  }
}

// Nest runs module-destroy hooks, then drains the HTTP server, then runs shutdown hooks: a
// webhook still in its handler during the drain keeps its claim and its client sockets.
describe('inline webhooks during app.close()', () => {
  let redis: TestRedisServer;
  let service: ClientStubServer;
  let closing: WebhookApp;
  let other: WebhookApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    service = await new ClientStubServer().start();
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const payment = { redisUrl: redis.url, webhookLeaseMs: 1000, baseUrl: service.url, clientId, clientSecret };
    closing = await startWebhookApp({ adapter: 'express', payment, extraProviders: [CallingHandler] });
    other = await startWebhookApp({ adapter: 'express', payment, extraProviders: [CallingHandler] });
  });
  afterAll(async () => {
    await closing?.close().catch(() => undefined);
    await other?.close();
    await service?.stop();
    await redis?.stop();
  });

  it('a handler running while the app closes keeps its claim and finishes its service call: handled once, answered 200', async () => {
    // the refund's answer takes 4 lease lengths (a refund is not retried after a reset: the socket must live)
    service.answer('POST', '/payment/trx_1/refund', { ...success({ refundUid: 'rfd_1' }, 201), delayMs: 4000 });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const handlersOf = (w: WebhookApp) => w.app.get(CallingHandler);

    const delivery = postWebhook(closing.url, event);
    await waitFor('the handler is sending the refund', () => service.calls('/payment/trx_1/refund').length === 1);
    const closed = closing.close();
    await sleep(1800); // past the lease: only renewal keeps the claim
    const copy = await postWebhook(other.url, event);
    expect(copy.status).toBe(409);
    expect((await delivery).status).toBe(200);
    await closed;
    expect(handlersOf(closing).done.get(id)).toBe(1);
    expect(handlersOf(other).entered.get(id)).toBeUndefined();
    expect(service.calls('/payment/trx_1/refund')).toHaveLength(1);
    expect(await postWebhook(other.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
  });
});
