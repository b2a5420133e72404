import 'reflect-metadata';
import { Inject, Injectable, Module, Scope } from '@nestjs/common';
import { DiscoveryModule, REQUEST } from '@nestjs/core';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test, type TestingModule } from '@nestjs/testing';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import { PaymentEventHandlerError, InvalidPaymentEventPatternError } from '../../lib/events/payment-event.errors.js';
import { PaymentEventHandlerRegistry } from '../../lib/events/payment-event-handler.registry.js';
import { EVENT_PIPELINE_PROVIDERS } from '../support/event-providers.js';
import type { AnyPaymentEvent, PaymentEvent, PaymentEventType } from '../../lib/events/payment-event.types.js';

/** Shared log of handler calls: `<handler>:<eventId>`. */
@Injectable()
class Calls {
  readonly log: string[] = [];
  record(handler: string, event: AnyPaymentEvent): void {
    this.log.push(`${handler}:${event.eventId}`);
  }
  of(handler: string): string[] {
    return this.log.filter((entry) => entry.startsWith(`${handler}:`));
  }
}

@Injectable()
class OrderHandlers {
  constructor(private readonly calls: Calls) {}

  @OnPaymentEvent('payment.succeeded')
  fulfil(event: PaymentEvent<'payment.succeeded'>): void {
    this.calls.record('fulfil', event);
  }

  @OnPaymentEvent(['refund.succeeded', 'refund.failed'])
  async refunds(event: PaymentEvent<'refund.succeeded' | 'refund.failed'>): Promise<void> {
    await Promise.resolve();
    this.calls.record('refunds', event);
  }

  // Overlapping patterns on one method: still one call per event.
  @OnPaymentEvent(['payout.failed', 'payout.*'])
  @OnPaymentEvent('payout.failed')
  payouts(event: PaymentEvent<'payout.created' | 'payout.succeeded' | 'payout.failed'>): void {
    this.calls.record('payouts', event);
  }
}

@Injectable()
class MailHandlers {
  constructor(private readonly calls: Calls) {}

  @OnPaymentEvent('payment.succeeded')
  receipt(event: PaymentEvent<'payment.succeeded'>): void {
    this.calls.record('receipt', event);
  }

  @OnPaymentEvent('payment.*')
  anyPayment(event: PaymentEvent<`payment.${'created' | 'pending' | 'succeeded' | 'failed' | 'cancelled' | 'expired'}`>): void {
    this.calls.record('anyPayment', event);
  }

  @OnPaymentEvent('*')
  audit(event: AnyPaymentEvent): void {
    this.calls.record('audit', event);
  }

  notAHandler(): void {
    this.calls.log.push('notAHandler');
  }
}

/** Fails on demand, to check that the other handlers still run. */
@Injectable()
class FlakyHandlers {
  failNext = false;
  /** Thrown as it is by the next run (not an Error). */
  throwNext: unknown;
  constructor(private readonly calls: Calls) {}

  @OnPaymentEvent('payment.succeeded')
  async flaky(event: PaymentEvent<'payment.succeeded'>): Promise<void> {
    this.calls.record('flaky', event);
    if (this.throwNext !== undefined) {
      const thrown = this.throwNext;
      this.throwNext = undefined;
      throw thrown;
    }
    if (this.failNext) {
      this.failNext = false;
      throw new Error('warehouse unavailable');
    }
  }

  @OnPaymentEvent('payment.failed')
  syncThrow(): void {
    throw new Error('sync failure');
  }
}

/** A fresh instance per event; REQUEST is the event. */
@Injectable({ scope: Scope.REQUEST })
class ScopedHandlers {
  private static created = 0;
  readonly serial = ++ScopedHandlers.created;
  constructor(
    private readonly calls: Calls,
    @Inject(REQUEST) private readonly request: AnyPaymentEvent,
  ) {}

  @OnPaymentEvent('payment.cancelled')
  first(event: PaymentEvent<'payment.cancelled'>): void {
    expect(this.request).toBe(event);
    this.calls.record(`scoped.first#${this.serial}`, event);
  }

  @OnPaymentEvent('payment.cancelled')
  second(event: PaymentEvent<'payment.cancelled'>): void {
    this.calls.record(`scoped.second#${this.serial}`, event);
  }
}

/** Host listeners on the namespaced EventEmitter2 name. */
@Injectable()
class HostListeners {
  throwOnce = false;
  constructor(private readonly calls: Calls) {}

  @OnEvent('payment-gateway.payment.succeeded', { suppressErrors: false })
  onSucceeded(event: PaymentEvent<'payment.succeeded'>): void {
    this.calls.record('host', event);
    if (this.throwOnce) {
      this.throwOnce = false;
      throw new Error('host listener failed');
    }
  }

  // The module never emits un-namespaced names.
  @OnEvent('payment.succeeded')
  collision(event: AnyPaymentEvent): void {
    this.calls.record('collision', event);
  }
}

@Module({
  providers: [Calls, MailHandlers, { provide: 'MAIL_ALIAS', useExisting: MailHandlers }],
  exports: [Calls],
})
class OtherFeatureModule {}

let counter = 0;
function event<T extends string>(eventType: T, data: Record<string, unknown> = {}): AnyPaymentEvent {
  counter += 1;
  return {
    account: 'default',
    receivedAt: new Date(),
    eventId: `evt_${counter}`,
    eventType,
    apiVersion: '2024-01-01',
    createdAt: new Date(0).toISOString(),
    environment: 'production',
    data: { trxId: `trx_${counter}`, token: 'tok', amount: '10.00000000', currency: 'USD', status: 'SUCCESS', ...data },
  };
}

describe('PaymentEventDispatcher', () => {
  let moduleRef: TestingModule;
  let dispatcher: PaymentEventDispatcher;
  let calls: Calls;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [DiscoveryModule, EventEmitterModule.forRoot(), OtherFeatureModule],
      providers: [
        ...EVENT_PIPELINE_PROVIDERS,
        OrderHandlers,
        FlakyHandlers,
        ScopedHandlers,
        HostListeners,
        { provide: 'ORDER_ALIAS', useExisting: OrderHandlers },
      ],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    dispatcher = moduleRef.get(PaymentEventDispatcher);
    calls = moduleRef.get(Calls, { strict: false });
  });

  afterAll(async () => {
    await moduleRef.close();
  });

  beforeEach(() => {
    calls.log.length = 0;
  });

  it('registers each decorated method once, aliases and undecorated methods excluded', () => {
    const names = moduleRef
      .get(PaymentEventHandlerRegistry)
      .list()
      .map((handler) => handler.name)
      .sort();
    expect(names).toEqual([
      'FlakyHandlers.flaky',
      'FlakyHandlers.syncThrow',
      'MailHandlers.anyPayment',
      'MailHandlers.audit',
      'MailHandlers.receipt',
      'OrderHandlers.fulfil',
      'OrderHandlers.payouts',
      'OrderHandlers.refunds',
      'ScopedHandlers.first',
      'ScopedHandlers.second',
    ]);
  });

  it('runs every handler of an exact type, the family wildcard, the catch-all and host listeners, once each', async () => {
    const e = event('payment.succeeded');
    await dispatcher.dispatch(e);
    expect([...calls.log].sort()).toEqual(
      ['anyPayment', 'audit', 'flaky', 'fulfil', 'host', 'receipt'].map((h) => `${h}:${e.eventId}`).sort(),
    );
    expect(calls.of('collision')).toEqual([]);
  });

  it('delivers array subscriptions for each listed type', async () => {
    const ok = event('refund.succeeded', { refundUid: 'rf_1' });
    const failed = event('refund.failed', { refundUid: 'rf_2', failureReason: 'closed account' });
    await dispatcher.dispatch(ok);
    await dispatcher.dispatch(failed);
    expect(calls.of('refunds')).toEqual([`refunds:${ok.eventId}`, `refunds:${failed.eventId}`]);
    expect(calls.of('audit')).toHaveLength(2);
    expect(calls.of('anyPayment')).toEqual([]);
  });

  it('calls a method once even when several of its patterns match', async () => {
    const e = event('payout.failed', { payoutUid: 'po_1' });
    await dispatcher.dispatch(e);
    expect(calls.of('payouts')).toEqual([`payouts:${e.eventId}`]);
  });

  it('delivers a family wildcard only its own family', async () => {
    for (const type of ['split.settled', 'subaccount_payout.created', 'dispute.created'] satisfies PaymentEventType[]) {
      await dispatcher.dispatch(event(type));
    }
    expect(calls.of('audit')).toHaveLength(3);
    expect(calls.log.filter((entry) => !entry.startsWith('audit:'))).toEqual([]);
  });

  it('delivers an unknown event type to catch-all handlers only', async () => {
    const future = event('payment.refunded_partially');
    const alien = event('chargeback.opened');
    await dispatcher.dispatch(future);
    await dispatcher.dispatch(alien);
    expect(calls.log).toEqual([`audit:${future.eventId}`, `audit:${alien.eventId}`]);
  });

  it('resolves request-scoped handler providers per event, shared by their methods', async () => {
    const a = event('payment.cancelled');
    const b = event('payment.cancelled');
    await dispatcher.dispatch(a);
    await dispatcher.dispatch(b);
    const scoped = calls.log.filter((entry) => entry.startsWith('scoped.'));
    expect(scoped).toHaveLength(4);
    const serialOf = (entry: string) => entry.split('#')[1]!.split(':')[0];
    const forA = scoped.filter((entry) => entry.endsWith(`:${a.eventId}`)).map(serialOf);
    const forB = scoped.filter((entry) => entry.endsWith(`:${b.eventId}`)).map(serialOf);
    expect(forA).toHaveLength(2);
    expect(new Set(forA).size).toBe(1);
    expect(new Set(forB).size).toBe(1);
    expect(forA[0]).not.toBe(forB[0]);
  });

  it('rejects with PaymentEventHandlerError naming the failed handler, after the others ran', async () => {
    const flaky = moduleRef.get(FlakyHandlers);
    flaky.failNext = true;
    const e = event('payment.succeeded');
    const error = await dispatcher.dispatch(e).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(PaymentEventHandlerError);
    const handlerError = error as PaymentEventHandlerError;
    expect(handlerError.handlers).toEqual(['FlakyHandlers.flaky']);
    expect(handlerError.eventId).toBe(e.eventId);
    expect(handlerError.code).toBe('PAYMENT_EVENT_HANDLER_FAILED');
    expect((handlerError.errors[0] as Error).message).toBe('warehouse unavailable');
    expect(handlerError.message).not.toContain(String(e.data.trxId));
    expect([...calls.log].sort()).toEqual(
      ['anyPayment', 'audit', 'flaky', 'fulfil', 'host', 'receipt'].map((h) => `${h}:${e.eventId}`).sort(),
    );

    // Redelivery of the same event succeeds and runs the handlers again.
    await expect(dispatcher.dispatch(e)).resolves.toBeUndefined();
  });

  it('reports a thrown value that cannot become text (no prototype, a throwing toString) as a handler failure, not a TypeError', async () => {
    for (const thrown of [Object.create(null), { toString: () => { throw new Error('no text'); } }]) {
      moduleRef.get(FlakyHandlers).throwNext = thrown;
      const error = await dispatcher.dispatch(event('payment.succeeded')).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(PaymentEventHandlerError);
      expect(error).toMatchObject({ handlers: ['FlakyHandlers.flaky'] });
      expect((error as PaymentEventHandlerError).errors[0]).toBe(thrown);
    }
  });

  it('turns a synchronous throw into a rejection', async () => {
    await expect(dispatcher.dispatch(event('payment.failed'))).rejects.toMatchObject({
      name: 'PaymentEventHandlerError',
      handlers: ['FlakyHandlers.syncThrow'],
    });
    expect(calls.of('anyPayment')).toHaveLength(1);
    expect(calls.of('audit')).toHaveLength(1);
  });

  it('fails the delivery when a host @OnEvent listener (suppressErrors: false) fails', async () => {
    moduleRef.get(HostListeners).throwOnce = true;
    const e = event('payment.succeeded');
    await expect(dispatcher.dispatch(e)).rejects.toMatchObject({
      handlers: ['EventEmitter2:payment-gateway.payment.succeeded'],
    });
    expect(calls.of('fulfil')).toEqual([`fulfil:${e.eventId}`]);
  });
});

describe('PaymentEventDispatcher without EventEmitter2', () => {
  it('still runs @OnPaymentEvent handlers', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [...EVENT_PIPELINE_PROVIDERS, Calls, OrderHandlers],
    }).compile();
    await moduleRef.init();
    const e = event('payment.succeeded');
    await moduleRef.get(PaymentEventDispatcher).dispatch(e);
    expect(moduleRef.get(Calls).log).toEqual([`fulfil:${e.eventId}`]);
    await moduleRef.close();
  });
});

describe('@OnPaymentEvent at run time', () => {
  it('rejects unknown patterns when the class is defined', () => {
    const decorate = (pattern: unknown) =>
      (OnPaymentEvent as (p: unknown) => MethodDecorator)(pattern)({}, 'm', { value: () => undefined });
    expect(() => decorate('payment.succeded')).toThrow(InvalidPaymentEventPatternError);
    expect(() => decorate('chargeback.*')).toThrow(InvalidPaymentEventPatternError);
    expect(() => decorate([])).toThrow(/at least one/);
    expect(() => decorate(42)).toThrow(InvalidPaymentEventPatternError);
    expect(() => decorate(['payment.*', '*', 'dispute.created'])).not.toThrow();
    // a pattern JSON.stringify cannot write still gets the named error (was a TypeError about BigInt)
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const pattern of [10n, circular]) expect(() => decorate(pattern)).toThrow(InvalidPaymentEventPatternError);
  });

  it('rejects options other than { account } (a string, a misspelt key), which would have bound the handler to every account', () => {
    const decorate = (options: unknown) =>
      (OnPaymentEvent as (p: unknown, o: unknown) => MethodDecorator)('refund.succeeded', options)({}, 'm', { value: () => undefined });
    // was accepted, and the handler meant for 'eu' received the default account's refunds too
    expect(() => decorate('eu')).toThrow(/@OnPaymentEvent: the options must be an object such as \{ account: 'eu' \}, got a string/);
    expect(() => decorate({ acount: 'eu' })).toThrow(/@OnPaymentEvent: unknown option 'acount' \(the one option is 'account'\)/);
    expect(() => decorate(null)).toThrow(/got null/);
    expect(() => decorate(['eu'])).toThrow(/got an array/);
    expect(() => decorate({ account: 'eu' })).not.toThrow();
    expect(() => decorate({ account: undefined })).not.toThrow();
    expect(() => decorate(undefined)).not.toThrow();
    // an instance of a class of the app's (its fields are its own business) is read for `account` only
    class TenantHandlerOptions {
      constructor(private readonly tenant: string) {}
      get account(): string {
        return this.tenant;
      }
    }
    expect(() => decorate(new TenantHandlerOptions('eu'))).not.toThrow();
    expect(() => decorate(Object.freeze({ account: 'eu' }))).not.toThrow();
    expect(() => decorate(Object.assign(Object.create(null), { account: 'eu' }))).not.toThrow();
  });

  it('rejects static methods, which no provider instance would carry', () => {
    expect(() => {
      class Handlers {
        @OnPaymentEvent('payment.succeeded')
        static handle(): void {}
      }
      return Handlers;
    }).toThrow(/static/);
  });

  it('rejects a method named by a symbol, which the method scan would never list', () => {
    const name = Symbol('onSucceeded');
    expect(() => {
      class Handlers {
        @OnPaymentEvent('payment.succeeded')
        [name](): void {}
      }
      return Handlers;
    }).toThrow(/symbol/);
  });
});

/** Transient wrappers hold a bare prototype; the handler must run on a constructed instance. */
@Injectable({ scope: Scope.TRANSIENT })
class TransientHandlers {
  constructor(private readonly calls: Calls) {}

  @OnPaymentEvent('payment.succeeded')
  handle(event: PaymentEvent<'payment.succeeded'>): void {
    this.calls.record('transient', event);
  }
}

@Injectable()
class UsesTransient {
  constructor(readonly handlers: TransientHandlers) {}
}

describe('PaymentEventDispatcher with a transient handler provider', () => {
  it('runs the handler on a constructed instance, once per event', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [...EVENT_PIPELINE_PROVIDERS, Calls, TransientHandlers, UsesTransient],
    }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    const e = event('payment.succeeded');
    await moduleRef.get(PaymentEventDispatcher).dispatch(e);
    expect(moduleRef.get(Calls).log).toEqual([`transient:${e.eventId}`]);
    await moduleRef.close();
  });
});
