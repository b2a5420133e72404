import 'reflect-metadata';
import { Controller, HttpCode, Injectable, Post, Req } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { PaymentMetricName } from '../../lib/telemetry/payment-telemetry.names.js';
import { PaymentWebhookReceiver } from '../../lib/webhooks/payment-webhook.receiver.js';
import type { PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import {
  byAttributes,
  counterPoints,
  disableOtelGlobals,
  histogramCounts,
  registerTestOtel,
  telemetryTexts,
  type TestOtel,
} from '../support/otel-sdk.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentServiceSimulator } from '../../lib/testing/payment-service.simulator.js';
import { SANDBOX_CLIENT } from '../support/client-simulator.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET, type WebhookApp } from '../support/webhooks-app.js';
import { waitFor } from '../support/wait.js';

const ATTACKER_SECRET = 'whsec_attacker_guess';

/** A host route that runs the receiver inside its own active span, as HTTP instrumentation would. */
@Controller('traced')
class TracedHostController {
  constructor(private readonly receiver: PaymentWebhookReceiver) {}

  @Post('webhook')
  @HttpCode(200)
  receive(@Req() request: PaymentWebhookRequest) {
    return trace.getTracer('host-http').startActiveSpan('POST /traced/webhook', { kind: SpanKind.SERVER }, async (span) => {
      try {
        return await this.receiver.receive(request);
      } finally {
        span.end();
      }
    });
  }
}

/** What a service answer may echo of a request: it must reach no span, metric or module log line. */
const ECHOED = 'holder=Jane Roe card=4111111111111111 account=ACCT-998877';
const echoingAnswer = () => ({ status: 400, body: { status: 'error', code: 'PAY_4000', message: `invalid request: ${ECHOED}`, errors: {}, data: [] } });

/** A handler whose payout the service refuses; the client error propagates, the delivery fails. */
@Injectable()
class PayoutOnFailure {
  constructor(private readonly client: PaymentGatewayService) {}

  @OnPaymentEvent('payment.failed')
  async onFailed(): Promise<void> {
    await this.client.createPayout({ amount: '1', currency: 'USD', recipient: { account_number: 'ACCT-998877' } });
  }
}

function byName(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

describe('webhook telemetry with the real OpenTelemetry SDK', () => {
  let otel: TestOtel;
  let w: WebhookApp;
  beforeAll(() => disableOtelGlobals());
  afterEach(async () => {
    await w?.close();
    await otel?.reset();
  });

  it('counts, times and traces a scripted mix exactly: handled, duplicate, bad signature, handler failure', async () => {
    otel = await registerTestOtel();
    w = await startWebhookApp({ adapter: 'express' });
    const handled = envelope('payment.succeeded');
    const failing = envelope('payment.failed');
    const forged = envelope('payment.succeeded');
    const signatures: string[] = [];
    const post = async (body: Record<string, unknown>, secret = WEBHOOK_SECRET) => {
      const raw = JSON.stringify(body);
      const signature = createWebhookSignatureHeader(raw, secret);
      signatures.push(signature.split('v1=')[1]!);
      return postWebhook(w.url, raw, { signature });
    };

    expect((await post(handled)).json).toEqual({ received: true });
    expect((await post(handled)).json).toEqual({ received: true, duplicate: true });
    expect((await post(forged, ATTACKER_SECRET)).status).toBe(401);
    w.handlers.failNext = 1;
    expect((await post(failing)).status).toBe(500);

    const all = await otel.collect();
    const expected = byAttributes([
      { outcome: 'handled', event_type: 'payment.succeeded', account: 'default' },
      { outcome: 'duplicate', event_type: 'payment.succeeded', account: 'default' },
      { outcome: 'rejected', code: 'WEBHOOK_SIGNATURE_MISMATCH', account: 'default' },
      { outcome: 'failed', code: 'WEBHOOK_HANDLER_FAILED', event_type: 'payment.failed', account: 'default' },
    ]);
    expect(counterPoints(all, PaymentMetricName.WEBHOOK_REQUESTS)).toEqual(byAttributes(expected.map((a) => ({ ...a, value: 1 }))));
    expect(histogramCounts(all, PaymentMetricName.WEBHOOK_DURATION)).toEqual(byAttributes(expected.map((a) => ({ ...a, count: 1 }))));
    const duration = all.find((m) => m.descriptor.name === PaymentMetricName.WEBHOOK_DURATION)!;
    expect(duration.descriptor.unit).toBe('s');
    // no client call was made (reconcile is off)
    expect(all.map((m) => m.descriptor.name).sort()).toEqual([PaymentMetricName.WEBHOOK_DURATION, PaymentMetricName.WEBHOOK_REQUESTS]);

    const spans = otel.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        'payment webhook payment.succeeded',
        'payment webhook payment.succeeded',
        'payment webhook payment.failed',
        'payment handler RecordingHandlers.onPayment',
        'payment handler RecordingHandlers.onAny',
        'payment handler RecordingHandlers.onPayment',
        'payment handler RecordingHandlers.onAny',
      ].sort(),
    );
    const [first, duplicate] = byName(spans, 'payment webhook payment.succeeded');
    expect(first!.attributes).toEqual({
      'payment_gateway.account': 'default',
      'payment_gateway.event_id': handled.eventId,
      'payment_gateway.event_type': 'payment.succeeded',
      'payment_gateway.outcome': 'handled',
    });
    expect(duplicate!.attributes['payment_gateway.outcome']).toBe('duplicate');
    expect(first!.status.code).toBe(SpanStatusCode.UNSET);
    // started in the active context: no HTTP instrumentation here, so they are roots
    expect(first!.parentSpanContext).toBeUndefined();

    const failed = byName(spans, 'payment webhook payment.failed')[0]!;
    expect(failed.attributes).toEqual({
      'payment_gateway.account': 'default',
      'payment_gateway.event_id': failing.eventId,
      'payment_gateway.event_type': 'payment.failed',
      'payment_gateway.outcome': 'failed',
      'payment_gateway.code': 'WEBHOOK_HANDLER_FAILED',
    });
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.events.map((e) => e.name)).toEqual(['exception']);

    // one span per handler invocation, children of their delivery's span
    const handlerSpans = spans.filter((s) => s.name.startsWith('payment handler '));
    for (const span of handlerSpans) {
      const parent = span.attributes['payment_gateway.event_id'] === handled.eventId ? first! : failed;
      expect(span.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(Object.keys(span.attributes).sort()).toEqual([
        'payment_gateway.account',
        'payment_gateway.event_id',
        'payment_gateway.event_type',
        'payment_gateway.handler',
      ]);
    }
    const failedHandler = handlerSpans.find((s) => s.status.code === SpanStatusCode.ERROR)!;
    expect(failedHandler.name).toBe('payment handler RecordingHandlers.onPayment');
    expect(failedHandler.attributes['payment_gateway.event_id']).toBe(failing.eventId);
    expect(failedHandler.events[0]!.attributes?.['exception.message']).toBe('handler failure injected by the test');
    expect(handlerSpans.filter((s) => s.status.code === SpanStatusCode.ERROR)).toHaveLength(1);

    // nothing secret and no payload field beyond ids and types
    const texts = telemetryTexts(all, spans);
    const forbidden = [WEBHOOK_SECRET, ATTACKER_SECRET, ...signatures];
    for (const body of [handled, failing, forged]) {
      const data = body.data as Record<string, string>;
      forbidden.push(data.token!, data.custom!, data.trxId!);
    }
    expect(texts.filter((text) => forbidden.some((secret) => text.includes(secret)))).toEqual([]);
    // the forged event's id was never trusted
    expect(texts.filter((text) => text.includes(String(forged.eventId)))).toEqual([]);
  });

  it('starts the delivery span in the active context: a child of the host HTTP span, handlers below it', async () => {
    otel = await registerTestOtel();
    w = await startWebhookApp({ adapter: 'express', controllers: [TracedHostController] });
    const event = envelope('refund.succeeded');
    expect((await postWebhook(w.url, event, { path: 'traced/webhook' })).status).toBe(200);

    const spans = otel.spans();
    const http = byName(spans, 'POST /traced/webhook')[0]!;
    const delivery = byName(spans, 'payment webhook refund.succeeded')[0]!;
    const handler = byName(spans, 'payment handler RecordingHandlers.onAny')[0]!;
    expect(delivery.parentSpanContext?.spanId).toBe(http.spanContext().spanId);
    expect(handler.parentSpanContext?.spanId).toBe(delivery.spanContext().spanId);
    expect(new Set([http, delivery, handler].map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(spans).toHaveLength(3);
  });

  it("names the host's EventEmitter2 listeners' span with a bounded event type; its attributes keep the signed type", async () => {
    otel = await registerTestOtel();
    @Injectable()
    class Listener {
      readonly seen: string[] = [];
      @OnEvent('payment-gateway.**')
      on(event: { eventType: string }): void {
        this.seen.push(event.eventType);
      }
    }
    w = await startWebhookApp({ adapter: 'express', extraImports: [EventEmitterModule.forRoot({ wildcard: true })], extraProviders: [Listener] });
    expect((await postWebhook(w.url, envelope('loyalty.points_granted_v7'))).status).toBe(200);
    expect((await postWebhook(w.url, envelope('payment.succeeded'))).status).toBe(200);
    expect(w.app.get(Listener).seen).toEqual(['loyalty.points_granted_v7', 'payment.succeeded']);
    const listenerSpans = otel.spans().filter((s) => s.name.startsWith('payment handler EventEmitter2:'));
    expect(listenerSpans.map((s) => s.name).sort()).toEqual([
      'payment handler EventEmitter2:payment-gateway.payment.succeeded',
      'payment handler EventEmitter2:payment-gateway.unknown',
    ]);
    const unknown = listenerSpans.find((s) => s.name.endsWith('.unknown'))!;
    expect(unknown.attributes).toMatchObject({
      'payment_gateway.handler': 'EventEmitter2:payment-gateway.loyalty.points_granted_v7',
      'payment_gateway.event_type': 'loyalty.points_granted_v7',
    });
  });

  it('picks up an SDK registered after the app started (instruments are not taken at boot)', async () => {
    w = await startWebhookApp({ adapter: 'express' });
    expect((await postWebhook(w.url, envelope())).status).toBe(200); // no SDK: nothing to record
    otel = await registerTestOtel();
    expect((await postWebhook(w.url, envelope())).status).toBe(200);
    const all = await otel.collect();
    expect(counterPoints(all, PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'handled', event_type: 'payment.succeeded', account: 'default', value: 1 },
    ]);
    expect(byName(otel.spans(), 'payment webhook payment.succeeded')).toHaveLength(1);
  });

  it('counts an event type the package does not know as "unknown" in metrics (few metric values)', async () => {
    otel = await registerTestOtel();
    w = await startWebhookApp({ adapter: 'express' });
    const event = envelope('loyalty.points_added');
    expect((await postWebhook(w.url, event)).status).toBe(200);
    const all = await otel.collect();
    expect(counterPoints(all, PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'handled', event_type: 'unknown', account: 'default', value: 1 },
    ]);
    const delivery = byName(otel.spans(), 'payment webhook unknown')[0]!;
    expect(delivery.attributes['payment_gateway.event_type']).toBe('loyalty.points_added');
  });

  it('counts a copy that arrives while its event is being handled as in_flight (409), and the first as handled', async () => {
    otel = await registerTestOtel();
    w = await startWebhookApp({ adapter: 'express' });
    const event = envelope('payment.succeeded');
    let release!: () => void;
    w.handlers.gate = new Promise<void>((resolve) => (release = resolve));
    const first = postWebhook(w.url, event);
    await waitFor('the first delivery entered its handler', () => w.handlers.entered > 0);
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    release();
    expect((await first).status).toBe(200);
    const expected = byAttributes([
      { outcome: 'handled', event_type: 'payment.succeeded', account: 'default' },
      { outcome: 'in_flight', code: 'WEBHOOK_EVENT_IN_FLIGHT', event_type: 'payment.succeeded', account: 'default' },
    ]);
    const all = await otel.collect();
    expect(counterPoints(all, PaymentMetricName.WEBHOOK_REQUESTS)).toEqual(byAttributes(expected.map((a) => ({ ...a, value: 1 }))));
    expect(histogramCounts(all, PaymentMetricName.WEBHOOK_DURATION)).toEqual(byAttributes(expected.map((a) => ({ ...a, count: 1 }))));
  });

  describe("a client error's text (the service's message, which may echo request fields) stays out of the delivery's telemetry", () => {
    let sim: PaymentServiceSimulator;
    beforeEach(async () => {
      sim = new PaymentServiceSimulator();
      await sim.start();
    });
    afterEach(() => sim.stop());
    const client = () => ({ baseUrl: sim.url, clientId: SANDBOX_CLIENT.clientId, clientSecret: SANDBOX_CLIENT.clientSecret, maxRetries: 0 });

    it('a failed reconciliation: the delivery span and log line name the client error by code and status', async () => {
      otel = await registerTestOtel();
      const logger = new CollectingLogger();
      w = await startWebhookApp({ adapter: 'express', logger, payment: { ...client(), reconcile: true } });
      sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'rewrite', rewrite: echoingAnswer });
      expect(await postWebhook(w.url, envelope('payment.succeeded'))).toMatchObject({ status: 503, json: { code: 'WEBHOOK_RECONCILIATION_FAILED' } });
      const [delivery] = byName(otel.spans(), 'payment webhook payment.succeeded');
      expect(delivery?.status.message).toContain('PaymentValidationError PAY_4000 (HTTP 400)');
      expect(telemetryTexts(await otel.collect(), otel.spans()).filter((text) => text.includes('4111111111111111'))).toEqual([]);
      expect(logger.rendered.filter((line) => line.includes('4111111111111111'))).toEqual([]);
      expect(logger.rendered.some((line) => line.includes('WEBHOOK_RECONCILIATION_FAILED') && line.includes('PAY_4000 (HTTP 400)'))).toBe(true);
    });

    it("a handler failing with a client error: its span records the error's class, code and status, not its message", async () => {
      otel = await registerTestOtel();
      w = await startWebhookApp({ adapter: 'express', payment: client(), extraProviders: [PayoutOnFailure] });
      sim.injectFault({ method: 'POST', path: '/payout', kind: 'rewrite', rewrite: echoingAnswer });
      expect((await postWebhook(w.url, envelope('payment.failed'))).status).toBe(500);
      const [handler] = byName(otel.spans(), 'payment handler PayoutOnFailure.onFailed');
      expect(handler?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'PaymentValidationError PAY_4000 (HTTP 400)' });
      expect(telemetryTexts(await otel.collect(), otel.spans()).filter((text) => text.includes('ACCT-998877'))).toEqual([]);
    });
  });

  it('counts an event signed for the other environment as ignored (answered 2xx, not dispatched)', async () => {
    otel = await registerTestOtel();
    w = await startWebhookApp({ adapter: 'express' }); // a sandbox account
    const event = envelope('payment.succeeded', { environment: 'production' });
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200, json: { received: true, ignored: 'environment' } });
    expect(w.handlers.count('payment.*', event.eventId as string)).toBe(0);
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'ignored', event_type: 'payment.succeeded', account: 'default', value: 1 },
    ]);
  });
});
