import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test, type TestingModule } from '@nestjs/testing';
import type { ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import { PaymentEventReconciliationError } from '../../lib/events/payment-event.errors.js';
import { EVENT_PIPELINE_PROVIDERS } from '../support/event-providers.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PAYMENT_ACCOUNT_CLIENT, PAYMENT_ACCOUNT_OPTIONS } from '../../lib/payment.constants.js';

/**
 * Unit-level only: a plain object stands in for PaymentGatewayService under its
 * own token, so this file checks the dispatcher's ordering and failure rules.
 * The HTTP reconciliation against the simulator is the webhook e2e's job.
 */
class StatusStandIn {
  readonly asked: string[] = [];
  answer: (trxId: string) => Promise<{ status: string }> = async () => ({ status: 'SUCCESS' });
  getPaymentStatus(trxId: string): Promise<{ status: string }> {
    this.asked.push(trxId);
    return this.answer(trxId);
  }
}

@Injectable()
class Seen {
  readonly events: Array<{ handler: string; eventId: string; canonicalStatus: string | undefined }> = [];

  @OnPaymentEvent('payment.*')
  payment(event: AnyPaymentEvent & { eventType: `payment.${string}` }): void {
    this.events.push({ handler: 'payment', eventId: event.eventId, canonicalStatus: event.canonicalStatus });
  }

  @OnPaymentEvent('*')
  all(event: AnyPaymentEvent): void {
    this.events.push({ handler: 'all', eventId: event.eventId, canonicalStatus: event.canonicalStatus });
  }

  @OnEvent('payment-gateway.payment.succeeded')
  host(event: AnyPaymentEvent): void {
    this.events.push({ handler: 'host', eventId: event.eventId, canonicalStatus: event.canonicalStatus });
  }
}

let counter = 0;
function event(eventType: string, data: Record<string, unknown>): AnyPaymentEvent {
  counter += 1;
  return {
    account: 'default',
    receivedAt: new Date(),
    eventId: `evt_r${counter}`,
    eventType,
    apiVersion: '2024-01-01',
    createdAt: new Date(0).toISOString(),
    environment: 'production',
    data,
  };
}

async function boot(reconcile: boolean, handlers = true): Promise<{ app: TestingModule; client: StatusStandIn; seen: Seen }> {
  const client = new StatusStandIn();
  const app = await Test.createTestingModule({
    imports: [DiscoveryModule, EventEmitterModule.forRoot()],
    providers: [
      ...EVENT_PIPELINE_PROVIDERS,
      ...(handlers ? [Seen] : []),
      { provide: PAYMENT_ACCOUNT_OPTIONS, useValue: { reconcile } as Partial<ResolvedPaymentOptions> },
      { provide: PAYMENT_ACCOUNT_CLIENT, useValue: client },
    ],
  }).compile();
  app.useLogger(false);
  await app.init();
  return { app, client, seen: handlers ? app.get(Seen) : new Seen() };
}

describe('reconciliation (reconcile: true)', () => {
  let app: TestingModule;
  let client: StatusStandIn;
  let seen: Seen;
  let dispatcher: PaymentEventDispatcher;

  beforeEach(async () => {
    ({ app, client, seen } = await boot(true));
    dispatcher = app.get(PaymentEventDispatcher);
  });

  afterEach(async () => {
    await app.close();
  });

  it('reads the status of the event trxId and attaches it before any handler runs', async () => {
    // Out of order: the event says PENDING, the service already says SUCCESS.
    const e = event('payment.pending', { trxId: 'trx_42', status: 'PENDING' });
    client.answer = async () => ({ status: 'SUCCESS' });
    await dispatcher.dispatch(e);
    expect(client.asked).toEqual(['trx_42']);
    expect(e.canonicalStatus).toBe('SUCCESS');
    expect(seen.events).toEqual([
      { handler: 'payment', eventId: e.eventId, canonicalStatus: 'SUCCESS' },
      { handler: 'all', eventId: e.eventId, canonicalStatus: 'SUCCESS' },
    ]);
  });

  it('hands host @OnEvent listeners the reconciled event too', async () => {
    const e = event('payment.succeeded', { trxId: 'trx_7', status: 'SUCCESS' });
    client.answer = async () => ({ status: 'REJECTED' });
    await dispatcher.dispatch(e);
    expect(seen.events.find((entry) => entry.handler === 'host')).toEqual({
      handler: 'host',
      eventId: e.eventId,
      canonicalStatus: 'REJECTED',
    });
  });

  it('runs no handler and rejects when the status read fails', async () => {
    const cause = new Error('service unavailable');
    client.answer = async () => {
      throw cause;
    };
    const e = event('payment.succeeded', { trxId: 'trx_1' });
    const error = await dispatcher.dispatch(e).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(PaymentEventReconciliationError);
    expect(error).toMatchObject({ eventId: e.eventId, trxId: 'trx_1', code: 'PAYMENT_EVENT_RECONCILIATION_FAILED' });
    expect((error as Error).cause).toBe(cause);
    expect(seen.events).toEqual([]);
    expect(e.canonicalStatus).toBeUndefined();
  });

  it('rejects when the status response has no status', async () => {
    client.answer = async () => ({}) as { status: string };
    await expect(dispatcher.dispatch(event('payment.succeeded', { trxId: 'trx_2' }))).rejects.toBeInstanceOf(
      PaymentEventReconciliationError,
    );
    expect(seen.events).toEqual([]);
  });

  it('reads the status of a trxId the body gives as a whole number (the id as text): a format detail loses no event', async () => {
    const e = event('payment.succeeded', { trxId: 12345, status: 'SUCCESS' });
    await dispatcher.dispatch(e);
    expect(client.asked).toEqual(['12345']);
    expect(e.canonicalStatus).toBe('SUCCESS');
    expect(seen.events.map((s) => s.handler)).toEqual(['payment', 'all', 'host']);
  });

  it('rejects a payment event without trxId rather than run handlers without a canonical status', async () => {
    await expect(dispatcher.dispatch(event('payment.succeeded', { token: 't' }))).rejects.toBeInstanceOf(
      PaymentEventReconciliationError,
    );
    expect(client.asked).toEqual([]);
    expect(seen.events).toEqual([]);
  });

  it('does not reconcile a payment type the package does not know (a new one, maybe without trxId): it reaches * as is', async () => {
    const e = event('payment.link_created', { linkId: 'lnk_1' });
    await dispatcher.dispatch(e);
    expect(client.asked).toEqual([]);
    expect(seen.events).toEqual([{ handler: 'all', eventId: e.eventId, canonicalStatus: undefined }]);
  });

  it('reads no status for an event nobody handles or listens to (it is acknowledged as is)', async () => {
    const bare = await boot(true, false);
    try {
      await bare.app.get(PaymentEventDispatcher).dispatch(event('payment.created', { trxId: 'trx_unheard' }));
      expect(bare.client.asked).toEqual([]);
    } finally {
      await bare.app.close();
    }
  });

  it('does not read a status for other families', async () => {
    const e = event('refund.succeeded', { refundUid: 'rf_1', trxId: 'trx_9' });
    await dispatcher.dispatch(e);
    expect(client.asked).toEqual([]);
    expect(seen.events).toEqual([{ handler: 'all', eventId: e.eventId, canonicalStatus: undefined }]);
  });
});

describe('reconciliation off (default)', () => {
  it('never calls the client', async () => {
    const { app, client, seen } = await boot(false);
    const e = event('payment.succeeded', { trxId: 'trx_3' });
    await app.get(PaymentEventDispatcher).dispatch(e);
    expect(client.asked).toEqual([]);
    expect(e.canonicalStatus).toBeUndefined();
    expect(seen.events.map((entry) => entry.handler).sort()).toEqual(['all', 'host', 'payment']);
    await app.close();
  });
});

describe('reconciliation without a client', () => {
  it('rejects instead of running handlers without a canonical status', async () => {
    const app = await Test.createTestingModule({
      imports: [DiscoveryModule],
      providers: [
        ...EVENT_PIPELINE_PROVIDERS,
        Seen,
        { provide: PAYMENT_ACCOUNT_OPTIONS, useValue: { reconcile: true } as Partial<ResolvedPaymentOptions> },
      ],
    }).compile();
    app.useLogger(false);
    await app.init();
    await expect(app.get(PaymentEventDispatcher).dispatch(event('payment.succeeded', { trxId: 'trx_4' }))).rejects.toThrow(
      PaymentEventReconciliationError,
    );
    expect(app.get(Seen).events).toEqual([]);
    await app.close();
  });
});
