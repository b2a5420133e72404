import 'reflect-metadata';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { ADAPTERS, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// Full loop against the simulator on loopback: the simulator signs and delivers webhooks
// (retrying non-2xx on its scaled schedule) and answers the status reads of reconciliation.
describe.each(ADAPTERS)('reconciliation (reconcile: true) against the simulator on %s', (adapter) => {
  let sim: PaymentServiceSimulator;
  let w: WebhookApp;
  let client: PaymentGatewayService;

  beforeAll(async () => {
    sim = new PaymentServiceSimulator({ rateLimits: false });
    await sim.start();
    w = await startWebhookApp({
      adapter,
      payment: {
        baseUrl: sim.url,
        clientId: 'sandbox-client',
        clientSecret: 'sandbox-secret',
        webhookSecret: 'whsec_sandbox',
        reconcile: true,
        maxRetries: 0,
      },
    });
    sim.setWebhookUrl(1, `${w.url}/payments/webhook`);
    client = w.app.get(PaymentGatewayService);
  });
  afterAll(async () => {
    await w?.close();
    await sim?.stop();
  });
  afterEach(() => {
    sim.setDeliveryFaults({ outOfOrder: false, duplicate: 0 });
    sim.clearFaults();
  });

  const paymentEvents = (trxId: string) =>
    w.handlers.calls.filter((c) => c.handler === 'payment.*' && (c.event.data as { trxId?: string }).trxId === trxId).map((c) => c.event);

  it('attaches the canonical status, so out-of-order events are decided from it', async () => {
    sim.setDeliveryFaults({ outOfOrder: true });
    const payment = await client.createPayment({ amount: '25.50', currency: 'USD', custom: 'order-1' });
    sim.completePayment(payment.trxId!, 'SUCCESS');
    await sim.waitForDeliveries();

    const events = paymentEvents(payment.trxId!);
    // succeeded arrives first, created after it: both carry the status the service holds now
    expect(events.map((e) => e.eventType)).toEqual(['payment.succeeded', 'payment.created']);
    expect(events.map((e) => e.canonicalStatus)).toEqual(['SUCCESS', 'SUCCESS']);
    expect(events[1]!.data.status).toBe('PENDING');
    expect(sim.deliveryLog.filter((d) => d.status !== 200)).toEqual([]);
  });

  it('answers 503 when the status read fails, then handles the redelivery once', async () => {
    sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'status', status: 500, code: 'PAY_5003', times: 1 });
    const payment = await client.createPayment({ amount: '5', currency: 'USD' });
    await sim.waitForDeliveries();

    const created = sim.deliveryLog.filter((d) => d.eventType === 'payment.created' && d.url.startsWith(w.url));
    const mine = created.filter((d) => sim.events.find((e) => e.eventId === d.eventId)?.data.trxId === payment.trxId);
    expect(mine.map((d) => d.status)).toEqual([503, 200]);
    const events = paymentEvents(payment.trxId!);
    expect(events).toHaveLength(1);
    expect(events[0]!.canonicalStatus).toBe('PENDING');
  });

  it('runs handlers once per event when the service delivers duplicates', async () => {
    sim.setDeliveryFaults({ duplicate: 2 });
    const payment = await client.createPayment({ amount: '7', currency: 'USD' });
    sim.completePayment(payment.trxId!, 'REJECTED');
    await sim.waitForDeliveries();
    const events = paymentEvents(payment.trxId!);
    expect(events.map((e) => e.eventType).sort()).toEqual(['payment.created', 'payment.failed']);
    expect(events.every((e) => e.canonicalStatus === 'REJECTED')).toBe(true);
    const copies = sim.deliveryLog.filter((d) => events.some((e) => e.eventId === d.eventId));
    expect(copies.length).toBeGreaterThanOrEqual(6);
    expect(copies.every((d) => d.status === 200)).toBe(true);
  });
});
