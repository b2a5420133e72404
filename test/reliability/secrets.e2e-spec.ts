import 'reflect-metadata';
import { inspect } from 'node:util';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentHttpClient } from '../../lib/client/payment-http.client.js';
import { LimiterPool, PaymentRateLimiter, SlidingWindowLimiter } from '../../lib/client/payment-rate-limiter.js';
import { PaymentRequestExecutor } from '../../lib/client/payment-request.executor.js';
import { PaymentTokenManager } from '../../lib/client/payment-token.manager.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { getPaymentOptionsToken } from '../../lib/accounts/payment-account.tokens.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { unusedLoopbackPort } from '../support/loopback-port.js';
import { paymentSucceeded, postSigned, type ReliabilityApp, startReliabilityApp, waitUntil } from '../support/reliability-app.js';

const CLIENT_ID = 'rel-client';
const CLIENT_SECRET = 'cs_rel_Sx9QvT4mK2pLw8Zr';
const WRONG_CLIENT_SECRET = 'cs_rel_wrong_Hh3Jk5Lm7Nn9';
const WEBHOOK_SECRET = 'whsec_rel_current_Qm4Rt6Yu8Io0';
const OLD_WEBHOOK_SECRET = 'whsec_rel_previous_Za1Xs3Cd5Vf7';
const ATTACKER_SECRET = 'whsec_rel_attacker_Bg2Nh4Mj6Ki8';

/** Every way an error could end up in a log or a response: message, stack, JSON, inspect. */
function renderError(error: unknown): string {
  if (!(error instanceof Error)) return inspect(error, { depth: 6 });
  return [error.message, error.stack, JSON.stringify(error), inspect(error, { depth: 6, showHidden: false })].join('\n');
}

describe('reliability: secrets never reach logs or errors', () => {
  let sim: PaymentServiceSimulator;
  let app: ReliabilityApp;
  const logger = new CollectingLogger();
  const errors: unknown[] = [];
  const capture = (p: Promise<unknown>) => p.catch((e: unknown) => void errors.push(e));

  beforeAll(async () => {
    sim = new PaymentServiceSimulator({
      merchants: [{ merchantId: 1, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, webhookSecret: WEBHOOK_SECRET, mode: 'sandbox' }],
      webhookTimeScale: 1e-4,
    });
    await sim.start();
    app = await startReliabilityApp(
      'express',
      {
        baseUrl: sim.url,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        webhookSecret: [WEBHOOK_SECRET, OLD_WEBHOOK_SECRET],
        httpTimeoutMs: 1_000,
        retryBaseDelayMs: 5,
        reconcile: true,
      },
      logger,
    );
    sim.setWebhookUrl(1, app.webhookUrl);
  });
  afterAll(async () => {
    await sim?.stop();
    await app?.close();
  });

  it('a run through the client and the webhooks, errors included, leaks no secret and no bearer token', async () => {
    const client = app.app.get(PaymentGatewayService);

    // payments whose events come back through the webhook route (some handlers fail once)
    const payments = [];
    for (let i = 0; i < 4; i++) payments.push(await client.createPayment({ amount: '15', currency: 'USD', custom: i % 2 ? `flaky:o${i}` : `o${i}` }));
    for (const p of payments) sim.completePayment(p.trxId!, 'SUCCESS');
    await sim.waitForDeliveries();
    expect(app.effects.totalRuns).toBeGreaterThanOrEqual(8);

    // service errors, retries and faults on the client side
    sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'status', status: 500, times: 2 });
    await client.getPaymentStatus(payments[0]!.trxId!);
    sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'status', status: 429, retryAfterSeconds: 1 });
    await client.getPaymentStatus(payments[0]!.trxId!);
    sim.injectFault({ method: 'GET', path: '/payment/status', kind: 'stall', times: 5 });
    await capture(client.getPaymentStatus(payments[0]!.trxId!));
    await capture(client.getPaymentStatus('trx_does_not_exist'));
    await capture(client.createPayment({ amount: '-1', currency: 'XX' }));
    await client.refundPayment(payments[0]!.trxId!, { amount: '5' });
    sim.injectFault({ method: 'POST', path: `/payment/${payments[1]!.trxId}/refund`, kind: 'reset', afterHandling: true });
    await capture(client.refundPayment(payments[1]!.trxId!, { amount: '5' }));
    await capture(client.refundPayment(payments[2]!.trxId!, { amount: '5000' }));
    await client.createPayout({ amount: '3', currency: 'USD', recipient: { account_number: '1' } });
    sim.injectFault({ method: 'POST', path: '/payout', kind: 'status', status: 500, afterHandling: true });
    await capture(client.createPayout({ amount: '3', currency: 'USD', recipient: { account_number: '1' } }));
    // the cached token expires on the service side: PAY_1003, then a new token
    sim.advanceTime(11 * 60_000);
    await client.getPaymentStatus(payments[0]!.trxId!);

    // a client with a wrong secret (PAY_1004) and a misconfigured one
    const wrong = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: sim.url, clientId: CLIENT_ID, clientSecret: WRONG_CLIENT_SECRET, retryBaseDelayMs: 5 }));
    await capture(wrong.getPaymentStatus(payments[0]!.trxId!));
    wrong.onApplicationShutdown();
    try {
      resolvePaymentOptions({ baseUrl: 'not a url', clientSecret: CLIENT_SECRET, webhookSecret: [WEBHOOK_SECRET, ''], httpTimeoutMs: -5 });
    } catch (error) {
      errors.push(error);
    }

    // webhook errors: wrong secret, forged by an attacker's key, old (rotated) secret, broken body
    const event = paymentSucceeded('secrets');
    const raw = JSON.stringify(event);
    const responses: string[] = [];
    for (const secret of [ATTACKER_SECRET, OLD_WEBHOOK_SECRET]) responses.push(JSON.stringify(await postSigned(app.webhookUrl, event, secret)));
    const broken = await fetch(app.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-signature': createWebhookSignatureHeader('{"a":', WEBHOOK_SECRET) },
      body: '{"a":',
    });
    responses.push(await broken.text());
    sim.setDeliveryFaults({ wrongSecret: ATTACKER_SECRET });
    const forged = sim.sendEvent(1, 'payment.succeeded', { ...(event.data as object), trxId: 'trx_forged' });
    await waitUntil('the forged delivery was refused', () => sim.deliveryLog.some((d) => d.eventId === forged.eventId && d.status === 401));
    sim.setDeliveryFaults({ wrongSecret: undefined });
    expect(raw.length).toBeGreaterThan(0);

    // the evidence really covers errors at several levels and the debug stream
    expect(errors.length).toBeGreaterThanOrEqual(7);
    expect(logger.rendered.some((l) => l.startsWith('debug '))).toBe(true);
    expect(logger.rendered.some((l) => l.startsWith('error ') || l.startsWith('warn '))).toBe(true);

    const tokens = new Set<string>();
    for (const r of sim.requests) {
      const auth = r.headers.authorization;
      const m = typeof auth === 'string' ? /^Bearer (.+)$/.exec(auth) : null;
      if (m) tokens.add(m[1]!);
    }
    expect(tokens.size).toBeGreaterThanOrEqual(2);
    const secrets = [CLIENT_SECRET, WRONG_CLIENT_SECRET, WEBHOOK_SECRET, OLD_WEBHOOK_SECRET, ATTACKER_SECRET, ...tokens];

    const haystacks: Array<[string, string]> = [
      ...logger.rendered.map((l, i): [string, string] => [`log line ${i}`, l]),
      ...errors.map((e, i): [string, string] => [`error ${i} (${(e as Error)?.name})`, renderError(e)]),
      ...responses.map((r, i): [string, string] => [`webhook response ${i}`, r]),
      ['resolved options (JSON)', JSON.stringify(app.app.get(getPaymentOptionsToken()))],
      ['resolved options (inspect)', inspect(app.app.get(getPaymentOptionsToken()), { depth: 4 })],
      // copies lose toJSON and the custom inspect: the secret fields must not be copied at all
      ['a spread copy of the options (JSON)', JSON.stringify({ ...app.app.get(getPaymentOptionsToken()) })],
      ['a structured clone of the options (inspect)', inspect(structuredClone({ ...app.app.get(getPaymentOptionsToken()) }), { depth: 4 })],
      ['the options\' entries', JSON.stringify(Object.entries(app.app.get(getPaymentOptionsToken())))],
    ];
    const leaks: string[] = [];
    for (const [where, text] of haystacks) {
      for (const secret of secrets) {
        if (text.includes(secret)) leaks.push(`${where} contains ${secret === CLIENT_SECRET ? 'the client secret' : secret.startsWith('whsec') ? 'a webhook secret' : secret === WRONG_CLIENT_SECRET ? 'a wrong client secret' : 'a bearer token'}: ${text.slice(0, 300)}`);
      }
    }
    expect(leaks).toEqual([]);
  }, 60_000);

  it('no bearer token in inspect or JSON of the client or any of its internals, after calls and while one is in flight', async () => {
    const client = new PaymentGatewayService(
      resolvePaymentOptions({ baseUrl: sim.url, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, httpTimeoutMs: 1_000, maxRetries: 0 }),
    );
    const firstRequest = sim.requests.length;
    let inFlight: Promise<unknown> | undefined;
    try {
      for (let i = 0; i < 2; i++) {
        const payment = await client.createPayment({ amount: '2', currency: 'USD' });
        await client.getPaymentStatus(payment.trxId!);
      }
      await client.listGateways();
      const dumps = dumpClient(client, 'after calls');
      // a request on the wire: its socket holds the Authorization header
      sim.injectFault({ method: 'GET', path: '/payments/gateways', kind: 'stall' });
      inFlight = client.listGateways().catch((e: unknown) => e);
      const deadline = Date.now() + 5_000;
      while (!sim.requests.slice(firstRequest).some((r) => r.fault === 'stall') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      dumps.push(...dumpClient(client, 'request in flight'));

      const tokens = new Set<string>();
      for (const r of sim.requests.slice(firstRequest)) {
        const m = /^Bearer (.+)$/.exec(String(r.headers.authorization ?? ''));
        if (m) tokens.add(m[1]!);
      }
      expect(tokens.size).toBeGreaterThanOrEqual(2); // a real token per payment, the newest one cached
      const leaks = dumps.filter(([, text]) => [...tokens, CLIENT_SECRET].some((secret) => text.includes(secret))).map(([where]) => where);
      expect(leaks).toEqual([]);
      expect(dumps.filter(([, text]) => text.startsWith('JSON.stringify threw')).map(([where]) => where)).toEqual([]);
    } finally {
      await inFlight;
      client.onApplicationShutdown();
    }
  });

  it('a Redis URL password stays out of store errors and outage logs, whatever its form', async () => {
    const port = await unusedLoopbackPort();
    const password = 'rd:P@ss-w0rd';
    const encoded = encodeURIComponent(password);
    const urls = [`redis://:${encoded}@127.0.0.1:${port}`, `redis://app:${encoded}@127.0.0.1:${port}/1`, `redis://127.0.0.1:${port}?password=${encoded}`];
    const texts: string[] = [];
    const firstLine = logger.rendered.length;
    for (const url of urls) {
      const store = new RedisWebhookEventStore(url, { operationTimeoutMs: 300 });
      try {
        texts.push(renderError(await store.claim('evt_secret', 1_000).then(() => new Error('claimed without Redis'), (e: unknown) => e)));
        texts.push(JSON.stringify(store), inspect(store, { depth: 6 }));
      } finally {
        await store.close();
      }
    }
    // ioredis cannot parse this one: its URL error carries the whole URL (password included)
    let parseError: unknown;
    try {
      new RedisWebhookEventStore(`redis://:${password}@127.0.0.1:99999`);
    } catch (error) {
      parseError = error;
    }
    expect((parseError as Error | undefined)?.name).toBe('TypeError');
    texts.push(renderError(parseError), inspect(parseError, { depth: 6, showHidden: true }));
    texts.push(...logger.rendered.slice(firstLine));
    expect(logger.rendered.length).toBeGreaterThan(firstLine); // the outage was logged
    for (const text of texts) {
      for (const secret of [password, encoded, 'P@ss', 'w0rd']) expect(text).not.toContain(secret);
    }
  });
});

const CLIENT_CLASSES = [PaymentGatewayService, PaymentRequestExecutor, PaymentTokenManager, PaymentRateLimiter, LimiterPool, SlidingWindowLimiter, PaymentHttpClient];

/**
 * `util.inspect` (depth 6, also with hidden properties) and `JSON.stringify` of the client
 * and of every client object reachable from it through its properties, as a logger or a
 * debugger would see them. Fails when one of the client's classes was not reached.
 */
function dumpClient(client: PaymentGatewayService, when: string): Array<[string, string]> {
  const found: object[] = [];
  const seen = new Set<unknown>();
  const walk = (value: unknown, depth: number): void => {
    if (typeof value !== 'object' || value === null || seen.has(value) || depth > 6) return;
    seen.add(value);
    const isClient = CLIENT_CLASSES.some((C) => value instanceof C);
    if (isClient) found.push(value);
    if (value instanceof Map) for (const v of value.values()) walk(v, depth + 1);
    // other libraries' objects (agents, sockets, loggers) are reached only through the client's own
    if (isClient || Array.isArray(value) || value instanceof Map || Object.getPrototypeOf(value) === Object.prototype) {
      for (const key of Object.getOwnPropertyNames(value)) walk((value as Record<string, unknown>)[key], depth + 1);
    }
  };
  walk(client, 0);
  for (const C of CLIENT_CLASSES) expect(found.some((o) => o instanceof C)).toBe(true);
  return found.flatMap((o): Array<[string, string]> => {
    const name = `${o.constructor.name} (${when})`;
    return [
      [`inspect ${name}`, inspect(o, { depth: 6 })],
      [`inspect showHidden ${name}`, inspect(o, { depth: 6, showHidden: true })],
      [`JSON ${name}`, jsonOf(o)],
    ];
  });
}

/** JSON of `value`, or why it could not be serialised (a logger serialising it would fail too). */
function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch (error) {
    return `JSON.stringify threw: ${(error as Error).message}`;
  }
}

