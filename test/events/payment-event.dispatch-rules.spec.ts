// Dispatch rules beyond matching: observables are run to their end, an event nobody listens
// to is acknowledged but warned about once per type, and account-bound handlers hear only
// their account. Real DI (Test module), real handlers; nothing of Nest is mocked.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { delay, Observable, of, tap, throwError } from 'rxjs';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import { PaymentEventHandlerError } from '../../lib/events/payment-event.errors.js';
import type { AnyPaymentEvent, PaymentEventEnvelope } from '../../lib/events/payment-event.types.js';
import { EVENT_PIPELINE_PROVIDERS } from '../support/event-providers.js';
import { CollectingLogger } from '../support/collecting-logger.js';

@Injectable()
class ObservableHandlers {
  readonly finished: string[] = [];
  failNext = false;

  // Returns an observable: the event counts as handled only once it completed.
  @OnPaymentEvent('refund.succeeded')
  onRefund(event: AnyPaymentEvent): Observable<unknown> {
    if (this.failNext) {
      this.failNext = false;
      return throwError(() => new Error('ledger unavailable'));
    }
    return of(event.eventId).pipe(
      delay(30),
      tap((id) => this.finished.push(id)),
    );
  }

  // an async method that ends with an observable (as Nest route handlers may): run it too
  @OnPaymentEvent('refund.failed')
  async onRefundFailed(event: AnyPaymentEvent): Promise<Observable<unknown>> {
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failNext) {
      this.failNext = false;
      return of(event.eventId).pipe(
        delay(10),
        tap(() => {
          throw new Error('payout ledger unavailable');
        }),
      );
    }
    return of(event.eventId).pipe(
      delay(30),
      tap((id) => this.finished.push(id)),
    );
  }
}

@Injectable()
class AccountHandlers {
  readonly seen: string[] = [];

  @OnPaymentEvent('payout.succeeded', { account: 'eu' })
  onEuPayout(event: AnyPaymentEvent): void {
    this.seen.push(`eu-only:${event.account}:${event.eventId}`);
  }

  @OnPaymentEvent('payout.*')
  onAnyPayout(event: AnyPaymentEvent): void {
    this.seen.push(`all:${event.account}:${event.eventId}`);
  }
}

let counter = 0;
function envelope(eventType: string, account?: string): PaymentEventEnvelope & { account?: string } {
  counter++;
  return {
    eventId: `evt_rules_${counter}`,
    eventType,
    apiVersion: '2025-01-01',
    createdAt: new Date(0).toISOString(),
    environment: 'sandbox',
    data: { payoutUid: `po_${counter}` },
    ...(account ? { account } : {}),
  };
}

describe('dispatch rules', () => {
  let moduleRef: TestingModule;
  let dispatcher: PaymentEventDispatcher;
  const logger = new CollectingLogger();

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [...EVENT_PIPELINE_PROVIDERS, ObservableHandlers, AccountHandlers],
    }).compile();
    moduleRef.useLogger(logger);
    await moduleRef.init();
    dispatcher = moduleRef.get(PaymentEventDispatcher);
  });
  afterAll(async () => {
    await moduleRef.close();
  });

  it('subscribes to an observable a handler returns and waits for it to complete', async () => {
    const handlers = moduleRef.get(ObservableHandlers);
    const event = envelope('refund.succeeded');
    await dispatcher.dispatch(event);
    // dispatch resolved only after the delayed observable ran its effect
    expect(handlers.finished).toEqual([event.eventId]);
  });

  it('runs an observable an async handler resolves with to its end, and fails the dispatch when it errors', async () => {
    const handlers = moduleRef.get(ObservableHandlers);
    const event = envelope('refund.failed');
    await dispatcher.dispatch(event);
    expect(handlers.finished).toContain(event.eventId);
    handlers.failNext = true;
    const error = await dispatcher.dispatch(envelope('refund.failed')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentEventHandlerError);
    expect(((error as PaymentEventHandlerError).errors[0] as Error).message).toBe('payout ledger unavailable');
  });

  it('fails the dispatch when the returned observable errors', async () => {
    const handlers = moduleRef.get(ObservableHandlers);
    handlers.failNext = true;
    const error = await dispatcher.dispatch(envelope('refund.succeeded')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentEventHandlerError);
    expect(((error as PaymentEventHandlerError).errors[0] as Error).message).toBe('ledger unavailable');
  });

  it('acknowledges an event type nobody listens to, warning once per type', async () => {
    const before = logger.lines.length;
    await expect(dispatcher.dispatch(envelope('split.settled'))).resolves.toBeUndefined();
    await expect(dispatcher.dispatch(envelope('split.settled'))).resolves.toBeUndefined();
    await expect(dispatcher.dispatch(envelope('dispute.created'))).resolves.toBeUndefined();
    const warnings = logger.lines.slice(before).filter((l) => l.level === 'warn').map((l) => l.message);
    expect(warnings.filter((w) => w.includes('split.settled'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('dispute.created'))).toHaveLength(1);
  });

  it("runs an account-bound handler for that account's events only; unbound handlers for every account", async () => {
    const handlers = moduleRef.get(AccountHandlers);
    const eu = envelope('payout.succeeded', 'eu');
    const us = envelope('payout.succeeded', 'us');
    const plain = envelope('payout.succeeded');
    await dispatcher.dispatch(eu);
    await dispatcher.dispatch(us);
    await dispatcher.dispatch(plain);
    expect(handlers.seen.sort()).toEqual(
      [`eu-only:eu:${eu.eventId}`, `all:eu:${eu.eventId}`, `all:us:${us.eventId}`, `all:default:${plain.eventId}`].sort(),
    );
  });
});

@Injectable()
class TwiceProvided {
  @OnPaymentEvent('payment.succeeded')
  onSucceeded(): void {}
}

describe('a handler class provided in two modules', () => {
  it('is warned about at boot: each instance runs its handlers, so every event reaches the class twice', async () => {
    @Module({ providers: [TwiceProvided] })
    class Orders {}
    @Module({ providers: [TwiceProvided] })
    class Billing {}
    const logger = new CollectingLogger();
    const moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule, Orders, Billing], providers: [...EVENT_PIPELINE_PROVIDERS] }).compile();
    moduleRef.useLogger(logger);
    await moduleRef.init();
    try {
      const warnings = logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);
      expect(warnings).toEqual([
        expect.stringContaining('TwiceProvided has @OnPaymentEvent handlers and 2 instances (TwiceProvided in Orders; TwiceProvided in Billing)'),
      ]);
    } finally {
      await moduleRef.close();
    }
  });

  it('names the tokens when one module registers the class twice (a second token with useClass): the fix differs', async () => {
    @Module({ providers: [TwiceProvided, { provide: 'FULFIL', useClass: TwiceProvided }] })
    class Orders {}
    const logger = new CollectingLogger();
    const moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule, Orders], providers: [...EVENT_PIPELINE_PROVIDERS] }).compile();
    moduleRef.useLogger(logger);
    await moduleRef.init();
    try {
      const warnings = logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);
      expect(warnings).toEqual([expect.stringContaining("2 instances (TwiceProvided in Orders; 'FULFIL' in Orders)")]);
    } finally {
      await moduleRef.close();
    }
  });
});
