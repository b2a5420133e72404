import 'reflect-metadata';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { PaymentNetworkError } from '../../lib/client/payment-api.errors.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import { rejectionOf, startClientHarness, type ClientHarness } from '../support/client-simulator.js';
import { disableOtelGlobals, registerTestOtel, type TestOtel } from '../support/otel-sdk.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET, type WebhookApp } from '../support/webhooks-app.js';

/** A host span processor with a bug: the SDK calls it synchronously inside `startSpan` / `span.end()` and does not catch. */
function throwingProcessor(hook: 'onStart' | 'onEnd'): SpanProcessor {
  const fail = () => {
    throw new TypeError(`span processor bug in ${hook}`);
  };
  return {
    onStart: hook === 'onStart' ? fail : () => undefined,
    onEnd: hook === 'onEnd' ? fail : () => undefined,
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
}

describe.each(['onStart', 'onEnd'] as const)('an OpenTelemetry SDK that throws in %s changes nothing the module does', (hook) => {
  let otel: TestOtel;
  let h: ClientHarness | undefined;
  let w: WebhookApp | undefined;
  beforeAll(() => disableOtelGlobals());
  beforeEach(async () => {
    otel = await registerTestOtel([throwingProcessor(hook)]);
  });
  afterEach(async () => {
    await h?.close();
    await w?.close();
    h = w = undefined;
    await otel.reset();
  });

  it('a refund the service made resolves (a rejection would invite sending it again); failures keep their own error', async () => {
    h = await startClientHarness({ httpTimeoutMs: 1_000 });
    h.sim.scriptNextPayment('succeed');
    const { trxId } = await h.client.createPayment({ amount: '100', currency: 'USD' });
    const refund = await h.client.refundPayment(trxId!, { amount: '10' });
    expect(refund.refundUid).toEqual(expect.any(String));
    expect(h.sim.refunds).toHaveLength(1);
    h.sim.injectFault({ path: /\/refund$/, kind: 'stall' });
    const timeout = await rejectionOf(h.client.refundPayment(trxId!, { amount: '5' }));
    expect(timeout).toBeInstanceOf(PaymentNetworkError);
    expect(timeout).toMatchObject({ code: 'TIMEOUT', mayHaveReachedService: true });
  });

  it('a handler that ran is not failed by its span: one run, 200, then duplicate; a failing handler still answers 500', async () => {
    w = await startWebhookApp({ adapter: 'express' });
    const post = (body: Record<string, unknown>) => {
      const raw = JSON.stringify(body);
      return postWebhook(w!.url, raw, { signature: createWebhookSignatureHeader(raw, WEBHOOK_SECRET) });
    };
    const event = envelope('payment.succeeded');
    expect(await post(event)).toMatchObject({ status: 200, json: { received: true } });
    expect(await post(event)).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(w.handlers.count('payment.*', event.eventId as string)).toBe(1);
    w.handlers.failNext = 1;
    expect(await post(envelope('payment.failed'))).toMatchObject({ status: 500, json: { code: 'WEBHOOK_HANDLER_FAILED' } });
  });
});
