import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { EventEmitter2, EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test, type TestingModule } from '@nestjs/testing';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent, PaymentEvent, PaymentEventEnvelope } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { accountDispatcher } from '../support/event-providers.js';

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

function event(eventId: string): PaymentEventEnvelope {
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

  it('reaches handlers in any module of the app, once each, without any EventEmitterModule in the host', async () => {
    const app = await boot([PaymentModule.forRoot(options), BillingModule]);
    // No host EventEmitterModule: the module registers no EventEmitter2 of its own.
    expect(() => app.get(EventEmitter2, { strict: false })).toThrow();
    await accountDispatcher(app).dispatch(event('evt_m1'));
    expect([...calls].sort()).toEqual(['audit:evt_m1', 'billing:evt_m1']);
    await app.close();
  });

  it("re-emits on the host's EventEmitter2: each host listener hears an event once", async () => {
    const app = await boot([EventEmitterModule.forRoot(), PaymentModule.forRoot(options), BillingModule]);
    await accountDispatcher(app).dispatch(event('evt_m2'));
    expect([...calls].sort()).toEqual(['audit:evt_m2', 'billing:evt_m2', 'host:evt_m2']);
    await app.close();
  });

  it.each([
    ['wildcard: false (the default)', EventEmitterModule.forRoot(), []],
    ['wildcard: true', EventEmitterModule.forRoot({ wildcard: true }), ['family:evt_w1']],
  ])("keeps the host emitter's options (%s): wildcard listeners hear events only when the host enabled wildcards", async (_label, hostEmitter, expected) => {
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
    await accountDispatcher(app).dispatch(event('evt_w1'));
    expect(calls).toEqual(expected);
    await app.close();
  });

  it('runs each handler once per dispatch with two PaymentModule instances (two accounts)', async () => {
    @Module({ imports: [PaymentModule.forRoot(options)] })
    class FirstAccount {}
    @Module({ imports: [PaymentModule.forRoot({ ...options, account: 'second' })] })
    class SecondAccount {}

    const app = await boot([EventEmitterModule.forRoot(), FirstAccount, SecondAccount, BillingModule]);
    const first = accountDispatcher(app);
    const second = accountDispatcher(app, 'second');
    expect(first === second).toBe(false);
    await first.dispatch(event('evt_a'));
    await second.dispatch(event('evt_b'));
    expect([...calls].sort()).toEqual(
      ['audit:evt_a', 'audit:evt_b', 'billing:evt_a', 'billing:evt_b', 'host:evt_a', 'host:evt_b'].sort(),
    );
    await app.close();
  });
});
