import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { OnPaymentEvent, PaymentGatewayService, PaymentModule, type PaymentEventForPattern } from '../../lib/index.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';

const WEBHOOK_SECRET = 'whsec_e2e';

/** What a host app does: fulfil an order once, deciding from the canonical status (spec 6.2). */
@Injectable()
class OrdersService {
  readonly handled: string[] = [];
  readonly fulfilled: string[] = [];

  constructor(private readonly payments: PaymentGatewayService) {}

  @OnPaymentEvent('payment.*')
  async onPayment(event: PaymentEventForPattern<'payment.*'>): Promise<void> {
    this.handled.push(event.eventId);
    const canonical = await this.payments.getPaymentStatus(event.data.trxId);
    const order = event.data.custom ?? '';
    if (canonical.status === 'SUCCESS' && !this.fulfilled.includes(order)) this.fulfilled.push(order);
  }
}

describe('simulator + PaymentModule end to end', () => {
  let sim: PaymentServiceSimulator;
  let app: INestApplication;

  beforeAll(async () => {
    sim = new PaymentServiceSimulator({
      merchants: [
        {
          merchantId: 7,
          clientId: 'sandbox-client',
          clientSecret: 'sandbox-secret',
          webhookSecret: WEBHOOK_SECRET,
          mode: 'sandbox',
        },
      ],
    });
    await sim.start();

    @Module({
      imports: [
        PaymentModule.forRoot({
          baseUrl: sim.url,
          environment: 'sandbox',
          clientId: 'sandbox-client',
          clientSecret: 'sandbox-secret',
          webhookSecret: WEBHOOK_SECRET,
        }),
      ],
      providers: [OrdersService],
    })
    class AppModule {}

    app = await NestFactory.create(AppModule, { rawBody: true, logger: false });
    await app.listen(0, '127.0.0.1');
    const appUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    sim.setWebhookUrl(7, `${appUrl}/payments/webhook`);
  });

  afterAll(async () => {
    await app?.close();
    await sim?.stop();
  });

  it('fulfils the order exactly once through created → pending → succeeded with duplicate and out-of-order delivery', async () => {
    sim.setDeliveryFaults({ duplicate: true, outOfOrder: true });
    const payments = app.get(PaymentGatewayService);
    sim.scriptNextPayment('pending-then-succeed');
    const created = await payments.createPayment({ amount: '49.99', currency: 'USD', custom: 'order-1001' });
    expect(created.pending).toBe(true);
    expect(created.status).toBe('PENDING');

    await sim.waitForDeliveries();

    // the service sent each event twice and succeeded first
    const firstCopies = sim.deliveryLog.filter((d) => !d.duplicate).map((d) => d.eventType);
    expect(firstCopies).toEqual(['payment.succeeded', 'payment.created', 'payment.pending']);
    expect(sim.deliveryLog).toHaveLength(6);
    expect(sim.deliveryLog.every((d) => d.status === 200)).toBe(true);
    // the module's answers: first copy handled, second recognised as a duplicate
    expect(sim.deliveryLog.map((d) => JSON.parse(d.responseBody ?? 'null'))).toEqual([
      { received: true },
      { received: true, duplicate: true },
      { received: true },
      { received: true, duplicate: true },
      { received: true },
      { received: true, duplicate: true },
    ]);

    const orders = app.get(OrdersService);
    expect(orders.fulfilled).toEqual(['order-1001']);
    expect([...orders.handled].sort()).toEqual(sim.events.map((e) => e.eventId).sort());
    expect((await payments.getPaymentStatus(created.trxId!)).status).toBe('SUCCESS');
  });
});
