import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import { PaymentEventReconciliationError } from '../../lib/events/payment-event.errors.js';
import { EVENT_PIPELINE_PROVIDERS } from '../support/event-providers.js';
import type { PaymentEvent } from '../../lib/events/payment-event.types.js';
import { PAYMENT_ACCOUNT_CLIENT, PAYMENT_ACCOUNT_OPTIONS } from '../../lib/payment.constants.js';
import { buildPaymentEvent } from '../../lib/testing/index.js';
import { startClientHarness, type ClientHarness } from '../support/client-simulator.js';

type PaymentFamily = 'payment.created' | 'payment.pending' | 'payment.succeeded' | 'payment.failed' | 'payment.cancelled' | 'payment.expired';

@Injectable()
class Orders {
  readonly decisions: Array<{ eventType: string; eventStatus: string; canonicalStatus: string | undefined }> = [];

  @OnPaymentEvent('payment.*')
  decide(event: PaymentEvent<PaymentFamily>): void {
    this.decisions.push({ eventType: event.eventType, eventStatus: event.data.status, canonicalStatus: event.canonicalStatus });
  }
}

/** Real PaymentGatewayService against the simulator's loopback HTTP server. */
describe('reconciliation with the real client against the simulator', () => {
  let harness: ClientHarness;
  let app: TestingModule;
  let dispatcher: PaymentEventDispatcher;
  let orders: Orders;

  beforeEach(async () => {
    harness = await startClientHarness({ reconcile: true, maxRetries: 0 });
    expect(harness.options.reconcile).toBe(true);
    app = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [
        ...EVENT_PIPELINE_PROVIDERS,
        Orders,
        { provide: PAYMENT_ACCOUNT_OPTIONS, useValue: harness.options },
        { provide: PAYMENT_ACCOUNT_CLIENT, useValue: harness.client },
      ],
    }).compile();
    app.useLogger(false);
    await app.init();
    dispatcher = app.get(PaymentEventDispatcher);
    orders = app.get(Orders);
  });

  afterEach(async () => {
    await app?.close();
    await harness?.close();
  });

  it('attaches the service status when events arrive out of order', async () => {
    harness.sim.scriptNextPayment('manual');
    const payment = await harness.client.createPayment({ amount: '10', currency: 'USD', custom: 'order-7' });
    harness.sim.completePayment(payment.trxId!, 'SUCCESS');

    // payment.pending arrives after the payment already succeeded (spec 6.2).
    const late = buildPaymentEvent('payment.pending', { trxId: payment.trxId, token: payment.token });
    await dispatcher.dispatch(late);

    expect(orders.decisions).toEqual([{ eventType: 'payment.pending', eventStatus: 'PENDING', canonicalStatus: 'SUCCESS' }]);
    expect(harness.calls('/payment/status', 'GET')).toHaveLength(1);
  });

  it('runs no handler when the service does not know the payment', async () => {
    const stranger = buildPaymentEvent('payment.succeeded', { trxId: 'trx_unknown' });
    const error = await dispatcher.dispatch(stranger).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(PaymentEventReconciliationError);
    expect((error as PaymentEventReconciliationError).cause).toMatchObject({ code: 'PAY_2001' });
    expect(orders.decisions).toEqual([]);
  });

  it('runs no handler when the status call fails, and succeeds on the redelivery', async () => {
    harness.sim.scriptNextPayment('succeed');
    const payment = await harness.client.createPayment({ amount: '3', currency: 'USD' });
    harness.sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'status', status: 500, code: 'PAY_5003' });
    const event = buildPaymentEvent('payment.succeeded', { trxId: payment.trxId });

    await expect(dispatcher.dispatch(event)).rejects.toBeInstanceOf(PaymentEventReconciliationError);
    expect(orders.decisions).toEqual([]);

    await dispatcher.dispatch(event);
    expect(orders.decisions).toEqual([{ eventType: 'payment.succeeded', eventStatus: 'SUCCESS', canonicalStatus: 'SUCCESS' }]);
  });

  it('reconciles when the status answer has data.status only (the one field the service documents)', async () => {
    harness.sim.scriptNextPayment('manual');
    const payment = await harness.client.createPayment({ amount: '5', currency: 'USD' });
    harness.sim.completePayment(payment.trxId!, 'REJECTED');
    // the real answer, cut down to { status, data: { status } }
    harness.sim.injectFault({
      method: 'GET',
      path: '/payment/status',
      kind: 'rewrite',
      rewrite: (body) => ({ body: { status: body.status, data: { status: (body.data as { status: unknown }).status } } }),
    });
    await dispatcher.dispatch(buildPaymentEvent('payment.pending', { trxId: payment.trxId }));
    expect(orders.decisions).toEqual([{ eventType: 'payment.pending', eventStatus: 'PENDING', canonicalStatus: 'REJECTED' }]);
    expect(harness.calls('/payment/status', 'GET')).toHaveLength(1);
  });
});
