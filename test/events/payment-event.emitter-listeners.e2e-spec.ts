import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { EventEmitter2, EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

/** Host listeners that fail (suppressErrors: false) beside listeners that take their time. */
@Injectable()
class HostListeners {
  readonly log: string[] = [];
  failFast = 0;
  failSync = 0;

  @OnEvent('payment-gateway.refund.succeeded', { suppressErrors: false })
  async fast(event: AnyPaymentEvent): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 10));
    if (this.failFast > 0) {
      this.failFast--;
      throw new Error('fast listener failed');
    }
    this.log.push(`fast ${event.eventId}`);
  }

  @OnEvent('payment-gateway.refund.succeeded', { suppressErrors: false })
  async slow(event: AnyPaymentEvent): Promise<void> {
    this.log.push(`slow start ${event.eventId}`);
    await new Promise((resolve) => setTimeout(resolve, 400));
    this.log.push(`slow end ${event.eventId}`);
  }

  @OnEvent('payment-gateway.refund.failed', { suppressErrors: false })
  first(event: AnyPaymentEvent): void {
    if (this.failSync > 0) {
      this.failSync--;
      throw new Error('first listener threw');
    }
    this.log.push(`first ${event.eventId}`);
  }

  @OnEvent('payment-gateway.refund.failed', { suppressErrors: false })
  second(event: AnyPaymentEvent): void {
    this.log.push(`second ${event.eventId}`);
  }
}

// EventEmitter2's emitAsync settles on the first rejection (and a synchronous throw skips the
// listeners after it): the delivery was answered 500 while a listener still ran, and the retry
// ran that listener a second time alongside the first run.
describe.each([{ wildcard: false }, { wildcard: true }])("host @OnEvent listeners, each run to its end (EventEmitterModule %o)", (emitterOptions) => {
  let w: WebhookApp;
  let listeners: HostListeners;
  beforeEach(async () => {
    w = await startWebhookApp({ adapter: 'express', extraImports: [EventEmitterModule.forRoot(emitterOptions)], extraProviders: [HostListeners] });
    listeners = w.app.get(HostListeners);
  });
  afterEach(async () => w.close());

  it('answers a delivery with a failed listener only after the other listeners ended; the retry runs them once more, not alongside', async () => {
    listeners.failFast = 1;
    const event = envelope('refund.succeeded', { data: { refundUid: 'rf_1' } });
    const first = await postWebhook(w.url, event);
    listeners.log.push('first answered');
    expect(first).toMatchObject({ status: 500, json: { code: 'WEBHOOK_HANDLER_FAILED' } });
    const retry = await postWebhook(w.url, event);
    expect(retry.status).toBe(200);
    const id = String(event.eventId);
    expect(listeners.log).toEqual([`slow start ${id}`, `slow end ${id}`, 'first answered', `slow start ${id}`, `fast ${id}`, `slow end ${id}`]);
  });

  it('runs the listeners after one that throws synchronously', async () => {
    listeners.failSync = 1;
    const event = envelope('refund.failed', { data: { refundUid: 'rf_2' } });
    expect((await postWebhook(w.url, event)).status).toBe(500);
    expect(listeners.log).toEqual([`second ${String(event.eventId)}`]);
  });

  it('still calls onAny listeners with the name, and `once` listeners once', async () => {
    const emitter = w.app.get(EventEmitter2);
    const heard: string[] = [];
    emitter.onAny((name: string | string[], event: AnyPaymentEvent) => void heard.push(`any ${String(name)} ${event.eventType}`));
    emitter.once('payment-gateway.refund.failed', (event: AnyPaymentEvent) => void heard.push(`once ${event.eventType}`));
    expect((await postWebhook(w.url, envelope('refund.failed', { data: { refundUid: 'rf_3' } }))).status).toBe(200);
    expect((await postWebhook(w.url, envelope('refund.failed', { data: { refundUid: 'rf_4' } }))).status).toBe(200);
    expect(heard).toEqual([
      'any payment-gateway.refund.failed refund.failed',
      'once refund.failed',
      'any payment-gateway.refund.failed refund.failed',
    ]);
  });
});

/** A library module with a private bus of its own under the EventEmitter2 class token (not exported). */
@Module({ providers: [{ provide: EventEmitter2, useValue: new EventEmitter2() }] })
class LibraryWithPrivateBus {}

@Injectable()
class SucceededListener {
  readonly heard: string[] = [];
  @OnEvent('payment-gateway.payment.succeeded')
  on(event: AnyPaymentEvent): void {
    this.heard.push(event.eventId);
  }
}

describe("the host's EventEmitter2 beside a library module's private one", () => {
  it('is the one the events reach: the one the module can inject, not the last registered in the app', async () => {
    const w = await startWebhookApp({ adapter: 'express', extraImports: [EventEmitterModule.forRoot(), LibraryWithPrivateBus], extraProviders: [SucceededListener] });
    try {
      const event = envelope('payment.succeeded');
      expect((await postWebhook(w.url, event)).status).toBe(200);
      expect(w.app.get(SucceededListener).heard).toEqual([event.eventId]);
    } finally {
      await w.close();
    }
  });
});
