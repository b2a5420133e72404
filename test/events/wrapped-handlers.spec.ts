import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import { PaymentEventHandlerRegistry } from '../../lib/events/payment-event-handler.registry.js';
import type { AnyPaymentEvent, PaymentEvent } from '../../lib/events/payment-event.types.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { EVENT_PIPELINE_PROVIDERS } from '../support/event-providers.js';

/** A decorator that replaces the method with a wrapper (as transaction, retry or tracing decorators do). */
function Audited(log: string[]): MethodDecorator {
  return (_target, key, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => unknown;
    descriptor.value = function (this: unknown, ...args: unknown[]) {
      log.push(`audit:${String(key)}`);
      return original.apply(this, args);
    };
    return descriptor;
  };
}

const log: string[] = [];

@Injectable()
class WrappedHandlers {
  // applied after @OnPaymentEvent (decorators apply bottom-up): its wrapper replaced the decorated function
  @Audited(log)
  @OnPaymentEvent('payment.succeeded')
  above(event: PaymentEvent<'payment.succeeded'>): void {
    log.push(`above:${event.eventId}`);
  }

  // bindings on both sides of a wrapper add up
  @OnPaymentEvent('refund.failed')
  @Audited(log)
  @OnPaymentEvent('refund.succeeded')
  refunds(event: PaymentEvent<'refund.succeeded' | 'refund.failed'>): void {
    log.push(`refunds:${event.eventId}`);
  }

  @OnPaymentEvent('payment.succeeded')
  @Audited(log)
  below(event: PaymentEvent<'payment.succeeded'>): void {
    log.push(`below:${event.eventId}`);
  }
}

class BaseHandlers {
  @OnPaymentEvent('payment.failed')
  onFailed(event: PaymentEvent<'payment.failed'>): void {
    log.push(`base:${event.eventId}`);
  }
}

/** An override without the decorator is not a handler (as with Nest's @OnEvent): the subclass chose. */
@Injectable()
class OverridingHandlers extends BaseHandlers {
  override onFailed(event: PaymentEvent<'payment.failed'>): void {
    log.push(`override:${event.eventId}`);
  }
}

function event(eventType: 'payment.succeeded' | 'payment.failed', eventId: string): AnyPaymentEvent {
  return {
    account: 'default',
    receivedAt: new Date(),
    eventId,
    eventType,
    apiVersion: '2024-01-15',
    createdAt: new Date(0).toISOString(),
    environment: 'sandbox',
    data: { trxId: 'trx_1', token: 'tok', amount: '10.00000000', currency: 'USD', status: eventType === 'payment.failed' ? 'FAILED' : 'SUCCESS' },
  };
}

describe('handlers whose method another decorator wrapped', () => {
  let moduleRef: TestingModule;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule], providers: [...EVENT_PIPELINE_PROVIDERS, WrappedHandlers, OverridingHandlers] }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
  });

  afterAll(() => moduleRef.close());

  beforeEach(() => {
    log.length = 0;
  });

  it('finds a handler whether the wrapping decorator sits above or below @OnPaymentEvent, and calls the wrapper', async () => {
    const names = moduleRef.get(PaymentEventHandlerRegistry).list().map((handler) => handler.name).sort();
    expect(names).toEqual(['WrappedHandlers.above', 'WrappedHandlers.below', 'WrappedHandlers.refunds']);
    await moduleRef.get(PaymentEventDispatcher).dispatch(event('payment.succeeded', 'evt_w1'));
    expect(log.sort()).toEqual(['above:evt_w1', 'audit:above', 'audit:below', 'below:evt_w1']);
  });

  it('keeps the bindings given on both sides of a wrapper', async () => {
    const dispatcher = moduleRef.get(PaymentEventDispatcher);
    for (const [type, id] of [['refund.succeeded', 'evt_w3'], ['refund.failed', 'evt_w4']] as const) {
      await dispatcher.dispatch({ ...event('payment.succeeded', id), eventType: type, data: { refundUid: 'rf_1', trxId: 'trx_1', amount: '1.00000000', currency: 'USD', status: 'SUCCESS' } } as AnyPaymentEvent);
    }
    expect(log).toEqual(['audit:refunds', 'refunds:evt_w3', 'audit:refunds', 'refunds:evt_w4']);
  });

  it('does not run an override the subclass left undecorated', async () => {
    await moduleRef.get(PaymentEventDispatcher).dispatch(event('payment.failed', 'evt_w2'));
    expect(log).toEqual([]);
  });
});

describe('a handler a subclass shadows with a class field of the same name', () => {
  it('is said at boot: the field runs for the event, though it reads as an undecorated override', async () => {
    @Injectable()
    class FieldOverride extends BaseHandlers {
      override onFailed = (event: PaymentEvent<'payment.failed'>): void => {
        log.push(`field:${event.eventId}`);
      };
    }
    const warnings = await bootAndDispatch(FieldOverride, 'evt_f1');
    expect(warnings).toContainEqual(
      expect.stringMatching(/^FieldOverride\.onFailed is an @OnPaymentEvent handler of a base class, shadowed by a property of the instance \(a class field\?\)/),
    );
    expect(log).toEqual(['field:evt_f1']);
  });

  it('is not said of a handler the class binds in its constructor (this.on = this.on.bind(this)): the decorated method runs', async () => {
    @Injectable()
    class BoundHandlers {
      constructor() {
        this.onFailed = this.onFailed.bind(this);
      }

      @OnPaymentEvent('payment.failed')
      onFailed(event: PaymentEvent<'payment.failed'>): void {
        log.push(`bound:${event.eventId}`);
      }
    }
    const warnings = await bootAndDispatch(BoundHandlers, 'evt_b1');
    expect(warnings.filter((line) => line.includes('shadowed'))).toEqual([]);
    expect(log).toEqual(['bound:evt_b1']);
  });
});

/** Boots the handlers of `provider` alone and dispatches one payment.failed event to them; the boot's warnings. */
async function bootAndDispatch(provider: new (...args: never[]) => unknown, eventId: string): Promise<string[]> {
  const logger = new CollectingLogger();
  const moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule], providers: [...EVENT_PIPELINE_PROVIDERS, provider] })
    .setLogger(logger)
    .compile();
  await moduleRef.init();
  try {
    log.length = 0;
    await moduleRef.get(PaymentEventDispatcher).dispatch(event('payment.failed', eventId));
    return logger.messages('warn');
  } finally {
    await moduleRef.close();
  }
}

/** Dispatches a payment.succeeded event to the handlers of `provider` alone; the first failed handler's error, as text. */
async function firstHandlerFailure(provider: new (...args: never[]) => unknown, eventId: string): Promise<string> {
  const moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule], providers: [...EVENT_PIPELINE_PROVIDERS, provider] }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  try {
    const failure = await moduleRef.get(PaymentEventDispatcher).dispatch(event('payment.succeeded', eventId)).then(() => undefined, (error: unknown) => error);
    return String((failure as { failures?: Array<{ error: unknown }> })?.failures?.[0]?.error);
  } finally {
    await moduleRef.close();
  }
}

describe('generator handlers, whose body a call never runs', () => {
  it('are refused when the class is defined', () => {
    for (const define of [
      () => {
        class Handlers {
          // @ts-expect-error refused by the types too (this is what plain JavaScript gets)
          @OnPaymentEvent('payment.succeeded')
          *fulfil(): Generator<number> {
            yield 1;
          }
        }
        return Handlers;
      },
      () => {
        class Handlers {
          // @ts-expect-error refused by the types too (this is what plain JavaScript gets)
          @OnPaymentEvent('payment.succeeded')
          async *fulfil(): AsyncGenerator<number> {
            yield 1;
          }
        }
        return Handlers;
      },
    ]) {
      expect(define).toThrow(/@OnPaymentEvent cannot decorate a generator method \(got Handlers\.fulfil\): calling it would not run its body/);
    }
  });

  it('fail the delivery when an async wrapper hides one (it resolves with the generator)', async () => {
    const ran: string[] = [];
    const AsyncTraced = (): MethodDecorator => (_target, _key, descriptor: PropertyDescriptor) => {
      const original = descriptor.value as (...args: unknown[]) => unknown;
      descriptor.value = async function (this: unknown, ...args: unknown[]) {
        return await original.apply(this, args);
      };
      return descriptor;
    };
    @Injectable()
    class AsyncHiddenGenerator {
      // @ts-expect-error refused by the types (plain JavaScript, or a wrapper typed loosely, gets past them)
      @OnPaymentEvent('payment.succeeded')
      @AsyncTraced()
      async *fulfil(event: PaymentEvent<'payment.succeeded'>): AsyncGenerator<void> {
        ran.push(event.eventId);
        yield;
      }
    }
    expect(await firstHandlerFailure(AsyncHiddenGenerator, 'evt_g2')).toMatch(/AsyncHiddenGenerator\.fulfil returned a generator/);
    expect(ran).toEqual([]);
  });

  it('fail the delivery when a wrapper hides one (answered non-2xx and retried, never recorded as handled)', async () => {
    const ran: string[] = [];
    @Injectable()
    class HiddenGenerator {
      // @ts-expect-error refused by the types (plain JavaScript, or a wrapper typed loosely, gets past them)
      @OnPaymentEvent('payment.succeeded')
      @Audited(ran)
      async *fulfil(event: PaymentEvent<'payment.succeeded'>): AsyncGenerator<void> {
        ran.push(event.eventId);
        yield;
      }
    }
    expect(await firstHandlerFailure(HiddenGenerator, 'evt_g1')).toMatch(
      /HiddenGenerator\.fulfil returned a generator: its body did not run\. Make the handler a plain or async method/,
    );
    expect(ran).toEqual(['audit:fulfil']);
  });
});
