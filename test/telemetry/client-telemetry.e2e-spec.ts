import 'reflect-metadata';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Histogram } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { PaymentNetworkError, PaymentValidationError } from '../../lib/client/payment-api.errors.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { PaymentMetricName } from '../../lib/telemetry/payment-telemetry.names.js';
import { rejectionOf, SANDBOX_CLIENT, startClientHarness, type ClientHarness } from '../support/client-simulator.js';
import { waitFor } from '../support/wait.js';
import {
  byAttributes,
  counterPoints,
  disableOtelGlobals,
  histogramCounts,
  pointsOf,
  registerTestOtel,
  telemetryTexts,
  type TestOtel,
} from '../support/otel-sdk.js';

const GATEWAYS = '/payments/gateways';
const CREATE = '/payment/create';
const REFUND = /^\/payment\/[^/]+\/refund$/;

function children(spans: ReadableSpan[], parent: ReadableSpan): ReadableSpan[] {
  return spans.filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);
}

describe('client telemetry with the real OpenTelemetry SDK (against the simulator)', () => {
  let otel: TestOtel;
  let h: ClientHarness;
  beforeAll(() => disableOtelGlobals());
  afterEach(async () => {
    await h?.close();
    await otel?.reset();
  });

  it('counts, times and traces a scripted mix exactly: 200, PAY_4000, 429 then 200, time-out', async () => {
    otel = await registerTestOtel();
    // only the stalled refund waits this long; every other call must beat it on a busy machine
    h = await startClientHarness({ httpTimeoutMs: 2000 });

    // 1. answered 200 (the first call also gets the token)
    await h.client.listGateways();
    // 2. PAY_4000: not retried (a fresh token is requested for every payment)
    h.sim.injectFault({ path: CREATE, kind: 'status', code: 'PAY_4000' });
    expect(await rejectionOf(h.client.createPayment({ amount: '7', currency: 'USD' }))).toBeInstanceOf(PaymentValidationError);
    // 3. 429 (Retry-After 1 s) then 200
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', status: 429 });
    await h.client.listGateways();
    // 4. time-out of a refund: not retried (the service may have acted)
    h.sim.injectFault({ path: REFUND, kind: 'stall' });
    const timeout = await rejectionOf(h.client.refundPayment('trx_unknown_1', { amount: '1' }));
    expect(timeout).toBeInstanceOf(PaymentNetworkError);
    expect(timeout.code).toBe('TIMEOUT');
    // 5. refused by the client's own checks, nothing sent: not counted, no span (a body that cannot be
    // written was counted as a PAY_4000 of the service)
    expect(await rejectionOf(h.client.createPayment({ amount: '-7', currency: 'USD' }))).toBeInstanceOf(PaymentValidationError);
    const unwritable = { toJSON: () => { throw new Error('cannot write'); } };
    expect(await rejectionOf(h.client.request({ method: 'POST', path: '/subaccounts', body: { unwritable } }))).toMatchObject({ clientSide: true });

    const all = await otel.collect();
    const calls = [
      { operation: 'token', outcome: 'ok', http_status: 200, account: 'default', n: 2 },
      { operation: 'list_gateways', outcome: 'ok', http_status: 200, account: 'default', n: 2 },
      { operation: 'create_payment', outcome: 'error', code: 'PAY_4000', http_status: 400, account: 'default', n: 1 },
      { operation: 'refund_payment', outcome: 'error', code: 'TIMEOUT', account: 'default', n: 1 },
    ];
    expect(counterPoints(all, PaymentMetricName.CLIENT_REQUESTS)).toEqual(byAttributes(calls.map(({ n, ...a }) => ({ ...a, value: n }))));
    expect(histogramCounts(all, PaymentMetricName.CLIENT_DURATION)).toEqual(byAttributes(calls.map(({ n, ...a }) => ({ ...a, count: n }))));
    expect(counterPoints(all, PaymentMetricName.CLIENT_RETRIES)).toEqual([
      { operation: 'list_gateways', code: 'RATE_LIMITED', account: 'default', value: 1 },
    ]);
    // one wait per attempt: 2 token calls, 3 gateway attempts, 1 creation, 1 refund
    expect(histogramCounts(all, PaymentMetricName.CLIENT_RATE_LIMIT_WAIT)).toEqual(
      byAttributes([
        { operation: 'token', account: 'default', count: 2 },
        { operation: 'list_gateways', account: 'default', count: 3 },
        { operation: 'create_payment', account: 'default', count: 1 },
        { operation: 'refund_payment', account: 'default', count: 1 },
      ]),
    );
    for (const name of [PaymentMetricName.CLIENT_DURATION, PaymentMetricName.CLIENT_RATE_LIMIT_WAIT]) {
      expect(all.find((m) => m.descriptor.name === name)!.descriptor.unit).toBe('s');
    }

    const spans = otel.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        'payment client list_gateways',
        'payment client token',
        'payment client create_payment',
        'payment client token',
        'payment client list_gateways',
        'payment client refund_payment',
      ].sort(),
    );
    expect(spans.every((s) => s.kind === SpanKind.CLIENT)).toBe(true);
    const [firstList, retriedList] = spans.filter((s) => s.name === 'payment client list_gateways').sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
    const create = spans.find((s) => s.name === 'payment client create_payment')!;
    const refund = spans.find((s) => s.name === 'payment client refund_payment')!;
    // the token call a call needed runs inside it
    expect(children(spans, firstList!).map((s) => s.name)).toEqual(['payment client token']);
    expect(children(spans, create).map((s) => s.name)).toEqual(['payment client token']);
    expect(children(spans, retriedList!)).toEqual([]);

    expect(firstList!.attributes).toEqual({
      'payment_gateway.operation': 'list_gateways',
      'payment_gateway.account': 'default',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'payment_gateway.outcome': 'ok',
      'payment_gateway.retries': 0,
    });
    expect(firstList!.status.code).toBe(SpanStatusCode.UNSET);
    expect(retriedList!.attributes['payment_gateway.retries']).toBe(1);
    expect(retriedList!.events.map((e) => [e.name, e.attributes])).toEqual([
      ['retry', { 'payment_gateway.code': 'RATE_LIMITED', 'payment_gateway.retry.delay_ms': 1000, 'payment_gateway.retry.number': 1 }],
    ]);
    expect(create.attributes).toMatchObject({ 'payment_gateway.code': 'PAY_4000', 'http.response.status_code': 400, 'payment_gateway.outcome': 'error' });
    expect(create.status.code).toBe(SpanStatusCode.ERROR);
    expect(create.events.map((e) => e.name)).toEqual(['exception']);
    expect(refund.attributes).toMatchObject({ 'payment_gateway.code': 'TIMEOUT', 'payment_gateway.outcome': 'error', 'http.request.method': 'POST' });
    expect(refund.attributes['http.response.status_code']).toBeUndefined();
    expect(refund.status.code).toBe(SpanStatusCode.ERROR);

    // no secret, bearer token or payload field in any attribute
    const tokens = new Set<string>();
    for (const r of h.sim.requests) {
      const m = typeof r.headers.authorization === 'string' ? /^Bearer (.+)$/.exec(r.headers.authorization) : null;
      if (m) tokens.add(m[1]!);
    }
    expect(tokens.size).toBe(2);
    const forbidden = [SANDBOX_CLIENT.clientSecret, SANDBOX_CLIENT.webhookSecret, ...tokens];
    expect(telemetryTexts(all, spans).filter((text) => forbidden.some((secret) => text.includes(secret)))).toEqual([]);
  });

  it('counts a token renewal as a retry, and a call that failed to get a token as an error of both calls', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    await h.client.listGateways();
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', code: 'PAY_1003' });
    await h.client.listGateways();
    const before = await otel.collect();
    expect(counterPoints(before, PaymentMetricName.CLIENT_RETRIES)).toEqual([
      { operation: 'list_gateways', code: 'PAY_1003', account: 'default', value: 1 },
    ]);

    h.sim.injectFault({ path: '/authentication/token', kind: 'status', code: 'PAY_1004' });
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', code: 'PAY_1003' });
    expect((await rejectionOf(h.client.listGateways())).code).toBe('PAY_1004');
    const after = await otel.collect();
    expect(counterPoints(after, PaymentMetricName.CLIENT_REQUESTS).filter((p) => p.outcome === 'error')).toEqual(
      byAttributes([
        { operation: 'token', outcome: 'error', code: 'PAY_1004', http_status: 401, account: 'default', value: 1 },
        { operation: 'list_gateways', outcome: 'error', code: 'PAY_1004', http_status: 401, account: 'default', value: 1 },
      ]),
    );
  });

  it('counts a retry when the repeat is sent: a call given up during its wait, or whose renewed token never came, counts none, and keeps its last answer\'s status', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    await h.client.listGateways(); // a cached token
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', status: 503, retryAfterSeconds: 5 });
    const controller = new AbortController();
    const aborted = rejectionOf(h.client.listGateways({ signal: controller.signal }));
    await waitFor('the 503 was answered', () => h.calls(GATEWAYS).length === 2);
    controller.abort();
    expect((await aborted).code).toBe('ABORTED');
    // a renewal decided after PAY_1003, its token refused: the call is not sent again
    h.sim.injectFault({ path: '/authentication/token', kind: 'status', code: 'PAY_1004' });
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', code: 'PAY_1003' });
    expect((await rejectionOf(h.client.listGateways())).code).toBe('PAY_1004');
    expect(h.calls(GATEWAYS)).toHaveLength(3);
    const points = await otel.collect();
    expect(counterPoints(points, PaymentMetricName.CLIENT_RETRIES)).toEqual([]);
    expect(counterPoints(points, PaymentMetricName.CLIENT_REQUESTS).find((p) => p.code === 'ABORTED')).toEqual({
      operation: 'list_gateways',
      outcome: 'error',
      code: 'ABORTED',
      http_status: 503,
      account: 'default',
      value: 1,
    });
    const spans = otel.spans().filter((s) => s.name === 'payment client list_gateways');
    expect(spans.map((s) => [s.attributes['payment_gateway.retries'], s.events.filter((e) => e.name === 'retry').length])).toEqual([
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
    expect(spans[1]!.attributes['http.response.status_code']).toBe(503);
  });

  it("a call whose repeat timed out after a 503 keeps that answer's status, as one given up while waiting to repeat it does", async () => {
    otel = await registerTestOtel();
    h = await startClientHarness({ httpTimeoutMs: 300, maxRetries: 1 });
    await h.client.listGateways(); // a cached token
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', status: 503 });
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'stall' });
    expect((await rejectionOf(h.client.listGateways())).code).toBe('TIMEOUT');
    // was without http_status
    expect(counterPoints(await otel.collect(), PaymentMetricName.CLIENT_REQUESTS).find((p) => p.code === 'TIMEOUT')).toMatchObject({ http_status: 503 });
  });

  it('records the rate-limit wait of a call given up in the queue for its slot', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    // on real time (the harness's clock would pass the minute at once)
    const client = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: h.sim.url, ...SANDBOX_CLIENT, rateLimits: { readsPerMinute: 1 } }));
    try {
      await client.listGateways(); // takes the minute's only read
      const controller = new AbortController();
      const given = rejectionOf(client.listGateways({ signal: controller.signal }));
      await new Promise((resolve) => setTimeout(resolve, 200));
      controller.abort();
      expect((await given).code).toBe('ABORTED');
    } finally {
      await client.onApplicationShutdown();
    }
    // was 1: the wait of the call given up was left out
    expect(histogramCounts(await otel.collect(), PaymentMetricName.CLIENT_RATE_LIMIT_WAIT).find((p) => p.operation === 'list_gateways')).toMatchObject({ count: 2 });
  });

  it("times a call on the client's clock, the clock its waits run on: a call that waited a minute for its slot lasted a minute", async () => {
    otel = await registerTestOtel();
    h = await startClientHarness({ rateLimits: { readsPerMinute: 1 } }); // the harness's clock passes the minute at once
    await h.client.listGateways();
    await h.client.listGateways(); // waits for the next minute's read
    const all = await otel.collect();
    const maxOf = (name: string) => pointsOf<Histogram>(all, name).find((p) => p.attributes.operation === 'list_gateways')!.value.max!;
    expect(maxOf(PaymentMetricName.CLIENT_RATE_LIMIT_WAIT)).toBeGreaterThanOrEqual(55);
    // was the real time it took (a few ms), shorter than its own wait
    expect(maxOf(PaymentMetricName.CLIENT_DURATION)).toBeGreaterThanOrEqual(maxOf(PaymentMetricName.CLIENT_RATE_LIMIT_WAIT));
  });

  it('counts codes the spec does not know by their HTTP status: an answer cannot add a series per request', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness({ maxRetries: 1, retryBaseDelayMs: 1 });
    // a code of the spec's shape it does not name, or an HTTP_ code that is not the answer's status, is still the answer's text
    for (const code of ['WAF_BLOCK_4f1c', 'WAF_BLOCK_9a2e', 'PAY_9999', 'PAY_5059', 'HTTP_999']) {
      h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', status: 400, code });
      await rejectionOf(h.client.listGateways());
    }
    // a retried 503 with the service's own code: counted by status, not lost in 'other'
    h.sim.injectFault({ method: 'GET', path: GATEWAYS, kind: 'status', status: 503, code: 'SERVICE_UNAVAILABLE' });
    await h.client.listGateways();
    const all = await otel.collect();
    const points = counterPoints(all, PaymentMetricName.CLIENT_REQUESTS).filter((p) => p.outcome === 'error');
    expect(points.map((p) => [p.code, p.value])).toEqual([['HTTP_400', 5]]);
    expect(counterPoints(all, PaymentMetricName.CLIENT_RETRIES)).toEqual([{ operation: 'list_gateways', code: 'HTTP_503', account: 'default', value: 1 }]);
  });

  it("records a failed call on its span by code and status only, never the service's message (it may echo request fields)", async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    h.sim.injectFault({
      method: 'POST',
      path: '/payout',
      kind: 'rewrite',
      rewrite: (_body, _status, request) => ({
        status: 400,
        body: { status: 'error', code: 'PAY_4000', message: `invalid recipient ${JSON.stringify((request.body as { recipient: unknown }).recipient)}`, errors: {}, data: [] },
      }),
    });
    const error = await rejectionOf(h.client.createPayout({ amount: '1', currency: 'USD', recipient: { account_number: 'ACCT-998877' } }));
    expect(error.message).toContain('invalid recipient'); // the caller still gets the service's words
    const span = otel.spans().find((s) => s.name === 'payment client create_payout')!;
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'PAY_4000 (HTTP 400)' });
    expect(span.events.map((e) => [e.name, e.attributes?.['exception.message']])).toEqual([['exception', 'PAY_4000 (HTTP 400)']]);
    expect(telemetryTexts(await otel.collect(), otel.spans()).filter((text) => text.includes('ACCT-998877'))).toEqual([]);
  });

  it('a call not sent because its token was refused has no HTTP status of its own (the token call has it)', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    h.sim.injectFault({
      method: 'POST',
      path: '/authentication/token',
      kind: 'rewrite',
      rewrite: () => ({ status: 400, body: { status: 'error', code: 'PAY_4000', message: 'bad token request', errors: {}, data: [] } }),
    });
    await rejectionOf(h.client.createPayment({ amount: '2', currency: 'USD' }));
    expect(h.calls('/payment/create')).toHaveLength(0);
    const points = counterPoints(await otel.collect(), PaymentMetricName.CLIENT_REQUESTS);
    expect(points.find((p) => p.operation === 'create_payment')).toEqual({ operation: 'create_payment', outcome: 'error', code: 'PAY_4000', account: 'default', value: 1 });
    expect(points.find((p) => p.operation === 'token')).toMatchObject({ outcome: 'error', code: 'PAY_4000', http_status: 400 });
    const span = otel.spans().find((s) => s.name === 'payment client create_payment')!;
    expect(span.attributes['http.response.status_code']).toBeUndefined();
  });

  it('counts a call on an account without credentials as a CONFIGURATION_ERROR (nothing sent, a setting to fix), unlike a refused input', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    const noCredentials = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: h.sim.url }), { clock: h.clock, random: () => 0.5 });
    try {
      expect(await rejectionOf(noCredentials.listGateways())).toMatchObject({ code: 'CONFIGURATION_ERROR' });
    } finally {
      noCredentials.onApplicationShutdown();
    }
    const points = counterPoints(await otel.collect(), PaymentMetricName.CLIENT_REQUESTS);
    expect(points).toEqual([expect.objectContaining({ operation: 'list_gateways', outcome: 'error', code: 'CONFIGURATION_ERROR', value: 1 })]);
    expect(h.sim.requests).toHaveLength(0);
  });

  it('names the account of a named forRoot() in every data point and span', async () => {
    otel = await registerTestOtel();
    h = await startClientHarness();
    // a spread copy of resolved options carries no secret: resolve the account's own
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const euOptions = resolvePaymentOptions({ baseUrl: h.sim.url, clientId, clientSecret }, {}, 'eu');
    const eu = new PaymentGatewayService(euOptions, { clock: h.clock, random: () => 0.5 });
    try {
      await eu.listGateways();
    } finally {
      eu.onApplicationShutdown();
    }
    const all = await otel.collect();
    expect(counterPoints(all, PaymentMetricName.CLIENT_REQUESTS).map((p) => p.account)).toEqual(['eu', 'eu']);
    expect(otel.spans().map((s) => s.attributes['payment_gateway.account'])).toEqual(['eu', 'eu']);
  });
});
