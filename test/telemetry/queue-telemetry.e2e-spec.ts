import 'reflect-metadata';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { PaymentMetricName, PaymentSpanAttribute } from '../../lib/telemetry/payment-telemetry.names.js';
import { byAttributes, counterPoints, disableOtelGlobals, histogramCounts, registerTestOtel, telemetryTexts, type TestOtel } from '../support/otel-sdk.js';
import { type QueueApp, sleep, startQueueApp, waitFor } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// Queue mode: the route answers `queued` at once and a worker runs the handlers later, in a
// BullMQ callback with no active span. Each attempt has its own span, a child of the
// delivery's (so the handlers join the delivery's trace), and its own metrics.
describe('queue mode telemetry with the real OpenTelemetry SDK and a real Redis', () => {
  let redis: TestRedisServer;
  let otel: TestOtel;
  let q: QueueApp;
  beforeAll(async () => {
    disableOtelGlobals();
    redis = await startRedisServer();
  });
  afterEach(async () => {
    await q?.close();
    await otel?.reset();
  });
  afterAll(async () => redis?.stop());

  const spansNamed = (name: string): ReadableSpan[] => otel.spans().filter((s) => s.name === name);
  /** A span's end as epoch milliseconds (the SDK keeps [seconds, nanoseconds]). */
  const endedAt = (span: ReadableSpan): number => span.endTime[0] * 1000 + span.endTime[1] / 1e6;

  it('counts and traces each attempt in the worker: handled, a failed attempt then handled, a dead letter', async () => {
    otel = await registerTestOtel();
    q = await startQueueApp(redis.url, { payment: { redisKeyPrefix: `qt-${Date.now()}:`, queueAttempts: 2 } });
    const ok = envelope('payment.succeeded');
    const flaky = envelope('refund.succeeded');
    const broken = envelope('payment.failed');
    q.handlers.failTimes.set(flaky.eventId as string, 1);
    q.handlers.failing.add(broken.eventId as string);
    for (const event of [ok, flaky, broken]) expect((await postWebhook(q.url, event)).json).toEqual({ received: true, queued: true });
    await waitFor('the handled events', () => q.handlers.count('done', ok.eventId as string) === 1 && q.handlers.count('done', flaky.eventId as string) === 1);
    await waitFor('the dead letter', async () => (await q.deadLetters.list()).length === 1);
    // counted when the worker hears of it, which may be after a read of Redis finds it (see below)
    let metrics = await otel.collect();
    await waitFor('the dead letter was counted', async () => {
      metrics = await otel.collect();
      return counterPoints(metrics, PaymentMetricName.QUEUE_DEAD_LETTERS).length > 0;
    }, 10_000);
    expect(counterPoints(metrics, PaymentMetricName.QUEUE_JOBS)).toEqual(
      byAttributes([
        { outcome: 'handled', event_type: 'payment.succeeded', account: 'default', value: 1 },
        { outcome: 'failed', event_type: 'refund.succeeded', account: 'default', value: 1 },
        { outcome: 'handled', event_type: 'refund.succeeded', account: 'default', value: 1 },
        { outcome: 'failed', event_type: 'payment.failed', account: 'default', value: 2 },
      ]),
    );
    expect(histogramCounts(metrics, PaymentMetricName.QUEUE_DURATION)).toHaveLength(4);
    expect(counterPoints(metrics, PaymentMetricName.QUEUE_DEAD_LETTERS)).toEqual([{ event_type: 'payment.failed', account: 'default', value: 1 }]);
    // the route counted each delivery once, as queued
    expect(counterPoints(metrics, PaymentMetricName.WEBHOOK_REQUESTS).map((p) => [p.outcome, p.value])).toEqual([
      ['queued', 1],
      ['queued', 1],
      ['queued', 1],
    ]);

    // each job span is a child of its delivery's span; the handler spans are children of the job span
    for (const [event, attempts] of [[ok, 1], [flaky, 2], [broken, 2]] as const) {
      const delivery = spansNamed(`payment webhook ${event.eventType as string}`).find((s) => s.attributes[PaymentSpanAttribute.EVENT_ID] === event.eventId)!;
      const jobs = spansNamed(`payment job ${event.eventType as string}`).filter((s) => s.attributes[PaymentSpanAttribute.EVENT_ID] === event.eventId);
      expect(jobs.map((s) => s.attributes[PaymentSpanAttribute.ATTEMPT]).sort()).toEqual(attempts === 1 ? [1] : [1, 2]);
      for (const job of jobs) {
        expect(job.kind).toBe(SpanKind.CONSUMER);
        expect(job.spanContext().traceId).toBe(delivery.spanContext().traceId);
        expect(job.parentSpanContext?.spanId).toBe(delivery.spanContext().spanId);
        const handlers = otel.spans().filter((s) => s.parentSpanContext?.spanId === job.spanContext().spanId);
        expect(handlers.map((s) => s.name)).toEqual(['payment handler QueueHandlers.handle']);
      }
    }
    const brokenJobs = spansNamed('payment job payment.failed');
    expect(brokenJobs.map((s) => [s.status.code, s.attributes[PaymentSpanAttribute.OUTCOME]])).toEqual([
      [SpanStatusCode.ERROR, 'failed'],
      [SpanStatusCode.ERROR, 'failed'],
    ]);
    // the exception's type is its class, as on delivery and client spans (OpenTelemetry's own default takes a `code` first)
    expect(brokenJobs.flatMap((s) => s.events.map((e) => e.attributes?.['exception.type']))).toEqual(['PaymentEventHandlerError', 'PaymentEventHandlerError']);
    // ids and types only: nothing of the payload beyond them
    const texts = telemetryTexts(metrics, otel.spans());
    expect(texts.filter((t) => t.includes(String((ok.data as { token: string }).token)))).toEqual([]);
  });

  // A replay runs the event again for a new reason: its attempts belong to the replay's trace
  // (the re-delivery's, the caller's of replay()), not to the first delivery's, long over.
  it("a replayed dead letter's job span is a child of the replay's span: the new delivery's, the caller's, or none", async () => {
    otel = await registerTestOtel();
    q = await startQueueApp(redis.url, { payment: { redisKeyPrefix: `qt-replay-${Date.now()}:`, queueAttempts: 1 } });
    const [redelivered, replayed, untraced] = [envelope('payment.succeeded'), envelope('payment.succeeded'), envelope('payment.succeeded')];
    const ids = [redelivered, replayed, untraced].map((e) => e.eventId as string);
    for (const id of ids) q.handlers.failing.add(id);
    for (const event of [redelivered, replayed, untraced]) expect((await postWebhook(q.url, event)).json).toEqual({ received: true, queued: true });
    for (const id of ids) await waitFor(`${id} is a dead letter`, async () => (await q.deadLetters.get(id)) !== undefined);
    for (const id of ids) q.handlers.failing.delete(id);

    // the portal's re-trigger, a host's admin route (its span active), a REPL (no span)
    expect((await postWebhook(q.url, redelivered)).json).toEqual({ received: true, queued: true });
    const adminRoute = 'POST /dead-letters/:eventId/replay';
    expect(await trace.getTracer('host').startActiveSpan(adminRoute, (span) => q.deadLetters.replay(ids[1]!).finally(() => span.end()))).toBe(true);
    expect(await q.deadLetters.replay(ids[2]!)).toBe(true);
    await waitFor('the replayed runs', () => ids.every((id) => q.handlers.count('done', id) === 1));
    await sleep(200);

    const deliveriesOf = (id: string) => spansNamed('payment webhook payment.succeeded').filter((s) => s.attributes[PaymentSpanAttribute.EVENT_ID] === id);
    const jobsOf = (id: string) => spansNamed('payment job payment.succeeded').filter((s) => s.attributes[PaymentSpanAttribute.EVENT_ID] === id);
    const [firstRun, replayRun] = jobsOf(ids[0]!);
    const [firstDelivery, newDelivery] = deliveriesOf(ids[0]!);
    expect([firstRun, replayRun].map((s) => s?.attributes[PaymentSpanAttribute.OUTCOME])).toEqual(['failed', 'handled']);
    expect(firstRun!.parentSpanContext?.spanId).toBe(firstDelivery!.spanContext().spanId);
    expect(replayRun!.parentSpanContext?.spanId).toBe(newDelivery!.spanContext().spanId);
    expect(replayRun!.spanContext().traceId).toBe(newDelivery!.spanContext().traceId);

    const replaySpan = spansNamed(adminRoute)[0]!;
    const serviceRun = jobsOf(ids[1]!).find((s) => s.attributes[PaymentSpanAttribute.OUTCOME] === 'handled')!;
    expect(serviceRun.parentSpanContext?.spanId).toBe(replaySpan.spanContext().spanId);
    expect(serviceRun.spanContext().traceId).toBe(replaySpan.spanContext().traceId);

    // no span around the replay: the run starts a trace of its own
    const untracedRun = jobsOf(ids[2]!).find((s) => s.attributes[PaymentSpanAttribute.OUTCOME] === 'handled')!;
    expect(untracedRun.parentSpanContext).toBeUndefined();
    expect(untracedRun.spanContext().traceId).not.toBe(deliveriesOf(ids[2]!)[0]!.spanContext().traceId);
    // the handlers' spans follow their job span
    for (const run of [replayRun!, serviceRun, untracedRun]) {
      expect(otel.spans().filter((s) => s.parentSpanContext?.spanId === run.spanContext().spanId).map((s) => s.name)).toEqual(['payment handler QueueHandlers.handle']);
    }
  });

  // The span and the measurement are the attempt's: BullMQ fails it at queueJobTimeoutMs while
  // the handler (which cannot be stopped) runs on, its own span open until it ends.
  it('a timed-out last attempt counts failed and ends its job span at the time-out; the late run is not its outcome', async () => {
    otel = await registerTestOtel();
    q = await startQueueApp(redis.url, { payment: { redisKeyPrefix: `qt-timeout-${Date.now()}:`, queueAttempts: 1, queueJobTimeoutMs: 1000 } });
    const slow = envelope('payment.failed');
    const id = slow.eventId as string;
    const release = q.handlers.hold(id);
    expect((await postWebhook(q.url, slow)).json).toEqual({ received: true, queued: true });
    await waitFor('the timed-out attempt became a dead letter', async () => (await q.deadLetters.get(id)) !== undefined, 10_000);
    // the worker hears of the failure (and counts it) once BullMQ's script that made it a dead letter has
    // returned: a read of Redis may come in between
    let metrics = await otel.collect();
    await waitFor('the dead letter was counted', async () => {
      metrics = await otel.collect();
      return counterPoints(metrics, PaymentMetricName.QUEUE_DEAD_LETTERS).length > 0;
    }, 10_000);
    const failed = [{ outcome: 'failed', event_type: 'payment.failed', account: 'default', value: 1 }];
    expect(counterPoints(metrics, PaymentMetricName.QUEUE_JOBS)).toEqual(failed);
    expect(histogramCounts(metrics, PaymentMetricName.QUEUE_DURATION)).toEqual([{ outcome: 'failed', event_type: 'payment.failed', account: 'default', count: 1 }]);
    expect(counterPoints(metrics, PaymentMetricName.QUEUE_DEAD_LETTERS)).toEqual([{ event_type: 'payment.failed', account: 'default', value: 1 }]);
    const [job, ...others] = spansNamed('payment job payment.failed');
    expect(others).toEqual([]);
    expect([job!.status.code, job!.attributes[PaymentSpanAttribute.OUTCOME]]).toEqual([SpanStatusCode.ERROR, 'failed']);
    expect(job!.status.message).toContain('did not finish within queueJobTimeoutMs (1000 ms)');
    expect(job!.events.map((e) => e.attributes?.['exception.type'])).toEqual(['PaymentEventJobTimeoutError']);
    // the handler is still running: its span is not over
    expect(spansNamed('payment handler QueueHandlers.handle')).toEqual([]);

    const releasedAt = Date.now();
    release();
    await waitFor('the late run finished', () => q.handlers.count('done', id) === 1);
    await waitFor('its dead letter was removed', async () => (await q.deadLetters.get(id)) === undefined, 10_000);
    await sleep(200);
    metrics = await otel.collect();
    // still the one failed attempt: the late success is not recorded as an outcome of it
    expect(counterPoints(metrics, PaymentMetricName.QUEUE_JOBS)).toEqual(failed);
    expect(histogramCounts(metrics, PaymentMetricName.QUEUE_DURATION)).toHaveLength(1);
    expect(spansNamed('payment job payment.failed')).toHaveLength(1);
    expect(endedAt(job!)).toBeLessThan(releasedAt);
    const handlers = spansNamed('payment handler QueueHandlers.handle');
    expect(handlers.map((s) => s.parentSpanContext?.spanId)).toEqual([job!.spanContext().spanId]);
    expect(endedAt(handlers[0]!)).toBeGreaterThan(endedAt(job!));
  });

  it('a timed-out attempt that is retried counts failed; its retry waits behind the run as in_flight', async () => {
    otel = await registerTestOtel();
    q = await startQueueApp(redis.url, { payment: { redisKeyPrefix: `qt-retry-${Date.now()}:`, queueAttempts: 2, queueJobTimeoutMs: 1000 } });
    const slow = envelope('refund.succeeded');
    const id = slow.eventId as string;
    const release = q.handlers.hold(id);
    expect((await postWebhook(q.url, slow)).json).toEqual({ received: true, queued: true });
    const points = async () => counterPoints(await otel.collect(), PaymentMetricName.QUEUE_JOBS);
    await waitFor('the retry found the event held by the timed-out run', async () => (await points()).some((p) => p.outcome === 'in_flight'), 10_000);
    const jobs = spansNamed('payment job refund.succeeded');
    expect(jobs.map((s) => [s.attributes[PaymentSpanAttribute.ATTEMPT], s.attributes[PaymentSpanAttribute.OUTCOME], s.status.code])).toContainEqual([
      1,
      'failed',
      SpanStatusCode.ERROR,
    ]);
    expect((await points()).find((p) => p.outcome === 'failed')).toEqual({ outcome: 'failed', event_type: 'refund.succeeded', account: 'default', value: 1 });

    release();
    await waitFor('the retry found the event processed', async () => (await points()).some((p) => p.outcome === 'duplicate'), 10_000);
    expect((await points()).map((p) => p.outcome)).not.toContain('handled');
    expect(q.handlers.count('entered', id)).toBe(1);
  });
});
