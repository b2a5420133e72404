import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { ClientStubServer } from '../support/client-stub-server.js';
import { disableOtelGlobals, registerTestOtel, telemetryTexts, type TestOtel } from '../support/otel-sdk.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

const ECHOED = 'recipient account 40817810099910004312 (Ivan Petrov) is blocked';

@Injectable()
class RefundingHandler {
  constructor(private readonly payments: PaymentGatewayService) {}
  @OnPaymentEvent('payment.succeeded')
  async onSucceeded(event: AnyPaymentEvent): Promise<void> {
    await this.payments.refundPayment(String((event.data as { trxId: string }).trxId));
  }
}

describe('a handler failing on a client error of this module', () => {
  let w: WebhookApp | undefined;
  let stub: ClientStubServer;
  let otel: TestOtel | undefined;
  beforeAll(() => disableOtelGlobals());
  afterEach(async () => {
    await w?.close();
    await stub?.stop();
    await otel?.reset();
  });

  it('logs the error by class, code and status with the stack frames, no text of the service answer (it echoes request fields), and telemetry the same', async () => {
    otel = await registerTestOtel();
    stub = await new ClientStubServer().start();
    const event = envelope('payment.succeeded');
    const trxId = (event.data as { trxId: string }).trxId;
    stub.answer('POST', `/payment/${trxId}/refund`, {
      status: 400,
      body: { status: 'error', code: 'PAY_4000', message: ECHOED, errors: {}, data: [] },
    });
    const logger = new CollectingLogger();
    w = await startWebhookApp({
      adapter: 'express',
      logger,
      payment: { baseUrl: stub.url, clientId: 'cid_review', clientSecret: 'csec_review_secret_value' },
      extraProviders: [RefundingHandler],
    });
    const res = await postWebhook(w.url, event);
    expect(res.status).toBe(500);
    expect(stub.calls(`/payment/${trxId}/refund`).length).toBeGreaterThan(0);
    const metrics = await otel.collect();
    const spans = otel.spans();
    const texts = telemetryTexts(metrics, spans);
    // spans and their exceptions keep the code only
    expect(texts.filter((t) => t.includes('Ivan Petrov'))).toEqual([]);
    // the handler's log line neither
    const leaking = logger.rendered.filter((l) => l.includes('Ivan Petrov'));
    expect(leaking).toEqual([]);
    const line = logger.rendered.find((l) => l.includes('RefundingHandler.onSucceeded failed on payment.succeeded'));
    expect(line).toContain('PaymentValidationError PAY_4000 (HTTP 400)');
    expect(line).toContain('at '); // the stack's frames stay: where the handler called the client
  });
});
