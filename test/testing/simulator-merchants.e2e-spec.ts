// README.md's "Several merchants" example, run with one Nest app per merchant (each app's URL replaces the configured one).
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { OnPaymentEvent, PaymentGatewayService, PaymentModule, type PaymentEventForPattern } from '../../lib/index.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';

@Injectable()
class Received {
  readonly events: PaymentEventForPattern<'payment.*'>[] = [];

  @OnPaymentEvent('payment.*')
  onEvent(event: PaymentEventForPattern<'payment.*'>): void {
    this.events.push(event);
  }
}

describe('simulator with several merchants + one PaymentModule per merchant', () => {
  const sim = new PaymentServiceSimulator({
    merchants: [
      { merchantId: 1, clientId: 'eu-shop', clientSecret: 'eu-secret', webhookSecret: 'whsec_eu', mode: 'sandbox' },
      { merchantId: 2, clientId: 'us-shop', clientSecret: 'us-secret', webhookSecret: 'whsec_us', mode: 'live',
        webhookUrl: 'http://127.0.0.1:3002/payments/webhook' },
    ],
  });
  const apps = new Map<number, INestApplication>();

  /** The app of one merchant, configured from the simulator's settings of that merchant. */
  async function appFor(merchantId: number): Promise<INestApplication> {
    const merchant = sim.merchant(merchantId);
    @Module({
      imports: [
        PaymentModule.forRoot({
          baseUrl: sim.url,
          environment: merchant.mode,
          clientId: merchant.clientId,
          clientSecret: merchant.clientSecret,
          webhookSecret: merchant.webhookSecret,
        }),
      ],
      providers: [Received],
    })
    class MerchantAppModule {}
    const app = await NestFactory.create(MerchantAppModule, { rawBody: true, logger: false });
    await app.listen(0, '127.0.0.1');
    sim.setWebhookUrl(merchantId, `${await app.getUrl()}/payments/webhook`);
    return app;
  }

  beforeAll(async () => {
    await sim.start();
    for (const id of [1, 2]) apps.set(id, await appFor(id));
  });

  afterAll(async () => {
    for (const app of apps.values()) await app.close();
    await sim.stop();
  });

  it("each app pays as its own merchant and receives only that merchant's events, verified with its own secret", async () => {
    sim.scriptNextPayment('succeed', 'succeed');
    const eu = await apps.get(1)!.get(PaymentGatewayService).createPayment({ amount: '10', currency: 'EUR', custom: 'eu-order' });
    const us = await apps.get(2)!.get(PaymentGatewayService).createPayment({ amount: '20', currency: 'USD', custom: 'us-order' });
    expect([sim.payment(eu.trxId!)?.merchantId, sim.payment(us.trxId!)?.merchantId]).toEqual([1, 2]);
    expect([sim.payment(eu.trxId!)?.mode, sim.payment(us.trxId!)?.mode]).toEqual(['sandbox', 'live']);

    await sim.waitForDeliveries();
    // the module answers 200 only to a valid signature under its own webhook secret
    expect(sim.deliveryLog.map((d) => d.status)).toEqual([200, 200, 200, 200]);
    // each attempt names its merchant, so a test filters the log without parsing URLs
    const urlOf = (id: number) => sim.merchant(id)?.webhookUrl;
    for (const d of sim.deliveryLog) expect(d.url).toBe(urlOf(d.merchantId));
    expect(sim.deliveryLog.map((d) => d.merchantId).sort()).toEqual([1, 1, 2, 2]);
    const received = (id: number) => apps.get(id)!.get(Received).events.map((e) => [e.eventType, e.data.custom, e.environment]);
    expect(received(1)).toEqual([
      ['payment.created', 'eu-order', 'sandbox'],
      ['payment.succeeded', 'eu-order', 'sandbox'],
    ]);
    expect(received(2)).toEqual([
      ['payment.created', 'us-order', 'production'],
      ['payment.succeeded', 'us-order', 'production'],
    ]);
  });
});
