import 'reflect-metadata';
import { Inject, Injectable, type LoggerService, Scope, type Type } from '@nestjs/common';
import { type ContextId, ContextIdFactory, type ContextIdStrategy, DiscoveryModule, type HostComponentInfo, REQUEST } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import type { AnyPaymentEvent, PaymentEvent } from '../../lib/events/payment-event.types.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { EVENT_PIPELINE_PROVIDERS } from '../support/event-providers.js';

/**
 * A host's ContextIdStrategy (Nest's durable providers, one tree per tenant) keyed on the
 * event's account: Nest applies it to HTTP requests, and the dispatcher must apply it to
 * events, or a durable handler provider is built again for every event.
 */
const tenantContexts = new Map<string, ContextId>();
class AccountTenantStrategy implements ContextIdStrategy {
  attach(contextId: ContextId, request: AnyPaymentEvent) {
    const tenant = request.account;
    let tenantContext = tenantContexts.get(tenant);
    if (tenantContext === undefined) tenantContexts.set(tenant, (tenantContext = ContextIdFactory.create()));
    return { resolve: (info: HostComponentInfo) => (info.isTreeDurable ? tenantContext : contextId), payload: { tenant } };
  }
}

@Injectable({ scope: Scope.REQUEST, durable: true })
class TenantHandlers {
  static built: string[] = [];
  readonly seen: string[] = [];
  constructor(@Inject(REQUEST) readonly request: { tenant: string }) {
    TenantHandlers.built.push(request.tenant);
  }

  @OnPaymentEvent('payment.succeeded')
  paid(event: PaymentEvent<'payment.succeeded'>): void {
    this.seen.push(`${this.request.tenant}:${event.eventId}`);
  }
}

let serial = 0;
function succeeded(account: string): AnyPaymentEvent {
  serial += 1;
  return {
    account,
    receivedAt: new Date(),
    eventId: `evt_durable_${serial}`,
    eventType: 'payment.succeeded',
    apiVersion: '2024-01-15',
    createdAt: new Date(0).toISOString(),
    environment: 'sandbox',
    data: { trxId: `trx_${serial}`, token: 'tok', amount: '10.00000000', currency: 'USD', status: 'SUCCESS' },
  };
}

/** The event pipeline with `handlers`, under `strategy` (Nest's global) while it runs. */
async function bootUnderStrategy(strategy: ContextIdStrategy, handlers: Type<unknown>, logger: LoggerService | false): Promise<TestingModule> {
  ContextIdFactory.apply(strategy);
  const moduleRef = await Test.createTestingModule({ imports: [DiscoveryModule], providers: [...EVENT_PIPELINE_PROVIDERS, handlers] }).compile();
  moduleRef.useLogger(logger);
  await moduleRef.init();
  return moduleRef;
}

async function closeAndDropStrategy(moduleRef: TestingModule): Promise<void> {
  await moduleRef.close();
  // the strategy is Nest's global: no other test of this file's module registry may meet it
  ContextIdFactory.apply({ attach: (contextId: ContextId) => () => contextId });
}

describe('durable handler providers (a host ContextIdStrategy)', () => {
  let moduleRef: TestingModule;

  beforeAll(async () => {
    moduleRef = await bootUnderStrategy(new AccountTenantStrategy(), TenantHandlers, false);
  });

  afterAll(() => closeAndDropStrategy(moduleRef));

  it('builds one instance per tenant, whose REQUEST is the strategy payload, and runs it for each of its events', async () => {
    const dispatcher = moduleRef.get(PaymentEventDispatcher);
    const events = [succeeded('eu'), succeeded('eu'), succeeded('us'), succeeded('eu')];
    for (const event of events) await dispatcher.dispatch(event);

    expect(TenantHandlers.built).toEqual(['eu', 'us']);
    const eu = await moduleRef.resolve(TenantHandlers, tenantContexts.get('eu'));
    expect(eu.seen).toEqual([events[0], events[1], events[3]].map((event) => `eu:${event!.eventId}`));
  });
});

/** The strategy of Nest's docs, written for HTTP requests: it reads a header, which an event does not have. */
class HeaderTenantStrategy implements ContextIdStrategy {
  attach(contextId: ContextId, request: { headers: Record<string, string> }) {
    const tenant = request.headers['x-tenant-id'];
    return (info: HostComponentInfo) => (info.isTreeDurable ? (tenantContexts.get(tenant!) ?? contextId) : contextId);
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerEventHandlers {
  static seen: string[] = [];
  constructor(@Inject(REQUEST) private readonly request: AnyPaymentEvent) {}

  @OnPaymentEvent('payment.succeeded')
  paid(event: PaymentEvent<'payment.succeeded'>): void {
    PerEventHandlers.seen.push(`${event.eventId}:${this.request.eventId}`);
  }
}

describe('request-scoped handlers under a host strategy written for HTTP requests only', () => {
  let moduleRef: TestingModule;
  const logger = new CollectingLogger();

  beforeAll(async () => {
    moduleRef = await bootUnderStrategy(new HeaderTenantStrategy(), PerEventHandlers, logger);
  });

  afterAll(() => closeAndDropStrategy(moduleRef));

  it('still runs them, each with the event as REQUEST, and says once that the strategy threw for events', async () => {
    const dispatcher = moduleRef.get(PaymentEventDispatcher);
    const events = [succeeded('default'), succeeded('default')];
    // the strategy's TypeError failed every event
    for (const event of events) await dispatcher.dispatch(event);
    expect(PerEventHandlers.seen).toEqual(events.map((event) => `${event.eventId}:${event.eventId}`));
    expect(logger.lines.filter((line) => line.message.includes('ContextIdFactory strategy threw')).map((line) => line.level)).toEqual(['warn']);
  });
});
