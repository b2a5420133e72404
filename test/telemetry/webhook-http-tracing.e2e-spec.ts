import { SpanKind } from '@opentelemetry/api';
import { type ChildApp, startChildApp } from '../support/child-app.js';
import { ADAPTERS, envelope, postWebhook, WEBHOOK_SECRET } from '../support/webhooks-app.js';

interface SpanSummary {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  target?: string;
}

// With the host's real HTTP instrumentation (a process of its own, see the fixture), the
// module's own route puts its delivery span under the incoming request's server span.
describe.each(ADAPTERS)("the webhook route under the host's OpenTelemetry HTTP instrumentation on %s", (adapter) => {
  let host: ChildApp;

  beforeAll(async () => {
    host = await startChildApp('test/telemetry/fixtures/http-instrumented-app.ts', { HOST_ADAPTER: adapter, HOST_WEBHOOK_SECRET: WEBHOOK_SECRET });
  });
  afterAll(async () => {
    await host?.stop();
  });

  it('starts the delivery span as a child of the HTTP server span, the handler span below it, in one trace', async () => {
    const event = envelope('payment.succeeded');
    expect(await postWebhook(host.url!, event)).toMatchObject({ status: 200, json: { received: true } });
    const spans = (await (await fetch(`${host.url}/spans`)).json()) as SpanSummary[];

    const server = spans.find((s) => s.kind === SpanKind.SERVER && s.target === '/payments/webhook');
    const delivery = spans.find((s) => s.name === 'payment webhook payment.succeeded');
    const handler = spans.find((s) => s.name === 'payment handler PaidHandler.onPaid');
    expect(server).toBeDefined();
    expect(delivery?.parentSpanId).toBe(server!.spanId);
    expect(handler?.parentSpanId).toBe(delivery!.spanId);
    expect(new Set([server, delivery, handler].map((s) => s!.traceId)).size).toBe(1);
  });
});
