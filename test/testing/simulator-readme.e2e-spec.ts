// README.md's simulator example ("A complete e2e test"), kept runnable: only the import paths differ.
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { OnPaymentEvent, PaymentGatewayService, PaymentModule, type PaymentEvent } from '../../lib/index.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';

@Injectable()
class Orders {
  readonly paid = new Set<string>();
  constructor(private readonly payments: PaymentGatewayService) {}

  @OnPaymentEvent('payment.succeeded')
  async onPaid(event: PaymentEvent<'payment.succeeded'>) {
    // Decide from the canonical status, never from event order alone (spec 6.2).
    const { status } = await this.payments.getPaymentStatus(event.data.trxId);
    if (status === 'SUCCESS') this.paid.add(event.data.custom ?? '');
  }
}

describe('checkout', () => {
  const sim = new PaymentServiceSimulator(); // sandbox merchant 1: sandbox-client / sandbox-secret, webhook secret whsec_sandbox
  let app: INestApplication;

  beforeAll(async () => {
    await sim.start();
    @Module({
      imports: [
        PaymentModule.forRoot({
          baseUrl: sim.url,
          environment: 'sandbox',
          clientId: 'sandbox-client',
          clientSecret: 'sandbox-secret',
          webhookSecret: 'whsec_sandbox',
        }),
      ],
      providers: [Orders],
    })
    class AppModule {}
    app = await NestFactory.create(AppModule, { rawBody: true, logger: false });
    await app.listen(0, '127.0.0.1');
    sim.setWebhookUrl(1, `${await app.getUrl()}/payments/webhook`);
  });

  afterAll(async () => {
    await app.close();
    await sim.stop();
  });

  it('fulfils a paid order once, even with duplicate and out-of-order webhooks', async () => {
    sim.setDeliveryFaults({ duplicate: true, outOfOrder: true });
    sim.scriptNextPayment('pending-then-succeed'); // 202, payment.pending, then payment.succeeded

    const payment = await app.get(PaymentGatewayService).createPayment({ amount: '49.99', currency: 'USD', custom: 'order-1001' });
    expect(payment.pending).toBe(true);

    await sim.waitForDeliveries();
    expect([...app.get(Orders).paid]).toEqual(['order-1001']);
    expect(sim.deliveryLog.every((d) => d.status === 200)).toBe(true);
  });
});
