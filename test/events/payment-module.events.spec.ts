import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test, type TestingModule } from '@nestjs/testing';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import type { AnyPaymentEvent, PaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';

const calls: string[] = [];

/** Lives in a feature module that knows nothing about PaymentModule. */
@Injectable()
class BillingHandlers {
  @OnPaymentEvent('payment.succeeded')
  paid(event: PaymentEvent<'payment.succeeded'>): void {
    calls.push(`billing:${event.eventId}`);
  }

  @OnPaymentEvent('*')
  audit(event: AnyPaymentEvent): void {
    calls.push(`audit:${event.eventId}`);
  }

  @OnEvent('payment-gateway.payment.succeeded')
  hostListener(event: AnyPaymentEvent): void {
    calls.push(`host:${event.eventId}`);
  }
}

@Module({ providers: [BillingHandlers] })
class BillingModule {}

const options = { baseUrl: 'http://127.0.0.1:9', clientId: 'id', clientSecret: 'secret', webhookSecret: 'whsec_test' };

function event(eventId: string): AnyPaymentEvent {
  return {
    eventId,
    eventType: 'payment.succeeded',
    apiVersion: '2025-01-01',
    createdAt: new Date(0).toISOString(),
    environment: 'sandbox',
    data: { trxId: 'trx_1', token: 't', amount: '1.00000000', currency: 'USD', status: 'SUCCESS' },
  };
}

async function boot(imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports }).compile();
  app.useLogger(false);
  await app.init();
  return app;
}

describe('events through PaymentModule.forRoot()', () => {
  beforeEach(() => {
    calls.length = 0;
  });

  it('reaches handlers in any module of the app, once each, and host @OnEvent listeners', async () => {
    const app = await boot([PaymentModule.forRoot(options), BillingModule]);
    await app.get(PaymentEventDispatcher).dispatch(event('evt_m1'));
    expect([...calls].sort()).toEqual(['audit:evt_m1', 'billing:evt_m1', 'host:evt_m1']);
    await app.close();
  });

  it('hears host listeners once when the host also imports EventEmitterModule.forRoot()', async () => {
    const app = await boot([EventEmitterModule.forRoot(), PaymentModule.forRoot(options), BillingModule]);
    await app.get(PaymentEventDispatcher).dispatch(event('evt_m2'));
    expect([...calls].sort()).toEqual(['audit:evt_m2', 'billing:evt_m2', 'host:evt_m2']);
    await app.close();
  });

  it.each([
    ['without options', EventEmitterModule.forRoot()],
    ['with wildcards of its own', EventEmitterModule.forRoot({ wildcard: true })],
  ])('lets host wildcard @OnEvent listeners hear events when the host EventEmitterModule is set up %s', async (_label, hostEmitter) => {
    @Injectable()
    class WildcardListener {
      @OnEvent('payment-gateway.payment.*')
      family(event: AnyPaymentEvent): void {
        calls.push(`family:${event.eventId}`);
      }
    }
    @Module({ providers: [WildcardListener] })
    class ListenerModule {}
    const app = await boot([hostEmitter, PaymentModule.forRoot(options), ListenerModule]);
    await app.get(PaymentEventDispatcher).dispatch(event('evt_w1'));
    expect(calls).toEqual(['family:evt_w1']);
    await app.close();
  });

  it('runs each handler once per dispatch with two PaymentModule instances', async () => {
    @Injectable()
    class FirstProbe {
      constructor(readonly dispatcher: PaymentEventDispatcher) {}
    }
    @Injectable()
    class SecondProbe {
      constructor(readonly dispatcher: PaymentEventDispatcher) {}
    }
    @Module({ imports: [PaymentModule.forRoot(options)], providers: [FirstProbe] })
    class FirstAccount {}
    @Module({ imports: [PaymentModule.forRoot({ ...options, webhookPath: 'payments/other' })], providers: [SecondProbe] })
    class SecondAccount {}

    const app = await boot([FirstAccount, SecondAccount, BillingModule]);
    const first = app.get(FirstProbe).dispatcher;
    const second = app.get(SecondProbe).dispatcher;
    expect(first === second).toBe(false);
    await first.dispatch(event('evt_a'));
    await second.dispatch(event('evt_b'));
    expect([...calls].sort()).toEqual(
      ['audit:evt_a', 'audit:evt_b', 'billing:evt_a', 'billing:evt_b', 'host:evt_a', 'host:evt_b'].sort(),
    );
    await app.close();
  });
});
