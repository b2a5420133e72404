import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { context, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { PaymentSpanAttribute } from '../../lib/telemetry/payment-telemetry.names.js';
import { disableOtelGlobals, registerTestOtel, type TestOtel } from '../support/otel-sdk.js';
import { type QueueApp, startQueueApp, waitFor } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// One timer renews the claims of every running delivery. Its calls to the store (the Redis
// commands an instrumented client traces) belong to no delivery: they must not run in the
// trace context of whichever delivery happened to start the timer.

/** What a store's client sees at each renewal: the event renewed and the span active then. */
interface Renewal {
  key: string;
  activeSpan: string | undefined;
}

/** The active span as `<name> <event id>` (the SDK's spans are readable), `undefined` when none is. */
function activeSpanName(): string | undefined {
  const span = trace.getActiveSpan() as Partial<ReadableSpan> | undefined;
  if (span === undefined) return undefined;
  return `${span.name ?? 'unnamed span'} ${String(span.attributes?.[PaymentSpanAttribute.EVENT_ID])}`;
}

class RecordingMemoryStore extends MemoryWebhookEventStore {
  readonly renewals: Renewal[] = [];
  override async extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
    this.renewals.push({ key, activeSpan: activeSpanName() });
    return super.extend(key, claimToken, leaseMs);
  }
}

/** Fails its first `failures` completions (the route's three, then background ones), recording the active span of each. */
class CompleteFailingStore extends MemoryWebhookEventStore {
  failures = 5;
  readonly completions: Array<string | undefined> = [];
  override async complete(key: string, claimToken: string, retentionMs: number): Promise<void> {
    this.completions.push(activeSpanName());
    if (this.failures-- > 0) throw new Error('store down');
    return super.complete(key, claimToken, retentionMs);
  }
}

class RecordingRedisStore extends RedisWebhookEventStore {
  readonly renewals: Renewal[] = [];
  override async extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
    this.renewals.push({ key, activeSpan: activeSpanName() });
    return super.extend(key, claimToken, leaseMs);
  }
}

/** Refund handlers of the inline app wait until the test lets them finish. */
const gates = new Map<string, () => void>();
@Injectable()
class GatedRefundHandler {
  @OnPaymentEvent('refund.*')
  async onRefund(event: AnyPaymentEvent): Promise<void> {
    await new Promise<void>((resolve) => gates.set(event.eventId, resolve));
  }
}

describe('lease renewals run outside every delivery\'s trace context (real OpenTelemetry SDK)', () => {
  let otel: TestOtel;
  let redis: TestRedisServer;
  let w: WebhookApp | undefined;
  let q: QueueApp | undefined;
  beforeAll(async () => {
    disableOtelGlobals();
    redis = await startRedisServer();
  });
  afterEach(async () => {
    await w?.close();
    await q?.close();
    w = q = undefined;
    await otel?.reset();
  });
  afterAll(async () => redis?.stop());

  it('inline: renewals of B, while A (which started the timer) has ended, run with no active span', async () => {
    otel = await registerTestOtel();
    const store = new RecordingMemoryStore();
    w = await startWebhookApp({ adapter: 'express', payment: { store, webhookLeaseMs: 300 }, extraProviders: [GatedRefundHandler] });
    const a = envelope('refund.succeeded');
    const b = envelope('refund.succeeded');
    const answerA = postWebhook(w.url, a);
    await waitFor('A runs', () => gates.has(a.eventId as string));
    const answerB = postWebhook(w.url, b);
    await waitFor('B runs', () => gates.has(b.eventId as string));
    gates.get(a.eventId as string)!();
    expect((await answerA).status).toBe(200);
    const renewedBefore = store.renewals.length;
    await waitFor('B renewed twice after A ended', () => store.renewals.slice(renewedBefore).filter((r) => r.key.endsWith(b.eventId as string)).length >= 2);
    gates.get(b.eventId as string)!();
    expect((await answerB).status).toBe(200);

    expect(otel.spans().filter((s) => s.name === 'payment webhook refund.succeeded')).toHaveLength(2);
    expect(store.renewals.length).toBeGreaterThan(0);
    expect(store.renewals.filter((r) => r.activeSpan !== undefined)).toEqual([]);
  });

  it("inline: a completion retried in the background, after the delivery's answer, runs with no active span", async () => {
    otel = await registerTestOtel();
    const store = new CompleteFailingStore();
    w = await startWebhookApp({ adapter: 'express', payment: { store } });
    const event = envelope('payment.succeeded');
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200 });
    await waitFor('the completion recorded in the background', () => store.completions.length === 6);
    const delivery = `payment webhook payment.succeeded ${String(event.eventId)}`;
    // the route's three attempts belong to the delivery; the retries after its answer to none
    expect(store.completions).toEqual([delivery, delivery, delivery, undefined, undefined, undefined]);
  });

  it('queue mode: a worker made while the host bootstrapped inside a span takes none of it: an untraced replay starts a trace of its own', async () => {
    otel = await registerTestOtel();
    const boot = trace.getTracer('host').startSpan('host bootstrap');
    q = await context.with(trace.setSpan(context.active(), boot), () =>
      startQueueApp(redis.url, { payment: { redisKeyPrefix: `boot-context-${Date.now()}:`, queueAttempts: 1 } }),
    );
    boot.end();
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    q.handlers.failTimes.set(id, 1);
    expect((await postWebhook(q.url, event)).json).toEqual({ received: true, queued: true });
    await waitFor('a dead letter', async () => (await q!.deadLetters.get(id)) !== undefined);
    expect(await q.deadLetters.replay(id)).toBe(true); // no span active here
    await waitFor('the replayed run', () => q!.handlers.count('done', id) === 1);
    await waitFor('both job spans', () => otel.spans().filter((s) => s.name === 'payment job payment.succeeded').length === 2);
    const replayed = otel.spans().filter((s) => s.name === 'payment job payment.succeeded')[1]!;
    expect(replayed.parentSpanContext).toBeUndefined();
    expect(replayed.spanContext().traceId).not.toBe(boot.spanContext().traceId);
  });

  it('queue mode: a worker\'s renewals run with no active span, not in the job span of the job that started the timer', async () => {
    otel = await registerTestOtel();
    const store = new RecordingRedisStore(redis.url, { keyPrefix: `renewal-context-${Date.now()}:` });
    try {
      q = await startQueueApp(redis.url, { payment: { store, webhookLeaseMs: 300 } });
      const a = envelope('payment.succeeded');
      const b = envelope('payment.succeeded');
      const releaseA = q.handlers.hold(a.eventId as string);
      const releaseB = q.handlers.hold(b.eventId as string);
      for (const event of [a, b]) expect((await postWebhook(q.url, event)).json).toEqual({ received: true, queued: true });
      await waitFor('A and B run', () => q!.handlers.count('entered', a.eventId as string) === 1 && q!.handlers.count('entered', b.eventId as string) === 1);
      releaseA();
      await waitFor('A handled', () => q!.handlers.count('done', a.eventId as string) === 1);
      const renewedBefore = store.renewals.length;
      await waitFor('B renewed twice after A ended', () => store.renewals.slice(renewedBefore).filter((r) => r.key.endsWith(b.eventId as string)).length >= 2);
      releaseB();
      await waitFor('B handled', () => q!.handlers.count('done', b.eventId as string) === 1);
      await waitFor('both job spans ended', () => otel.spans().filter((s) => s.name === 'payment job payment.succeeded').length === 2);

      expect(store.renewals.filter((r) => r.activeSpan !== undefined)).toEqual([]);
    } finally {
      await q?.close();
      q = undefined;
      await store.close();
    }
  });
});
