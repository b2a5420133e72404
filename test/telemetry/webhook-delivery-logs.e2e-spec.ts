import 'reflect-metadata';
import { Body, ConsoleLogger, Controller, ForbiddenException, HttpCode, Injectable, Module, Post, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PaymentModule } from '../../lib/payment.module.js';
import type { FastifyInstance } from 'fastify';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentWebhookReceiver } from '../../lib/webhooks/payment-webhook.receiver.js';
import type { PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { PaymentMetricName } from '../../lib/telemetry/payment-telemetry.names.js';
import { CollectingLogger, type LogLine } from '../support/collecting-logger.js';
import { unusedLoopbackPort } from '../support/loopback-port.js';
import { ClientStubServer } from '../support/client-stub-server.js';
import { counterPoints, disableOtelGlobals, registerTestOtel, telemetryTexts, type TestOtel } from '../support/otel-sdk.js';
import { startRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import { ADAPTERS, envelope, PerAccountWebhookController, postWebhook, RecordingHandlers, startWebhookApp, WEBHOOK_SECRET, type WebhookApp } from '../support/webhooks-app.js';

/** A host route that hands the receiver its parsed body instead of the request. */
@Controller('body-hook')
class BodyInsteadOfRequestController {
  constructor(private readonly receiver: PaymentWebhookReceiver) {}

  @Post()
  @HttpCode(200)
  receive(@Body() body: PaymentWebhookRequest) {
    return this.receiver.receive(body);
  }
}

/** A handler whose refund the service refuses with a message echoing the request's fields. */
@Injectable()
class RefundingHandler {
  constructor(private readonly payments: PaymentGatewayService) {}

  @OnPaymentEvent('payment.succeeded')
  async onSucceeded(event: AnyPaymentEvent): Promise<void> {
    await this.payments.refundPayment(String((event.data as { trxId: string }).trxId));
  }
}

/** Lines of the webhook pipeline about deliveries. */
function deliveries(logger: CollectingLogger): LogLine[] {
  return logger.lines.filter((l) => l.context === 'PaymentWebhooks' && l.message.startsWith('Webhook delivery'));
}

// The README's recipe, verbatim: the payment module's lines only from `warn` up.
const PAYMENT_CONTEXTS = new Set(['PaymentWebhooks', 'PaymentEvents', 'PaymentGatewayService', 'RedisWebhookEventStore', 'PaymentQueue', 'PaymentTelemetry']);
const isPaymentContext = (rest: unknown[]) => PAYMENT_CONTEXTS.has(rest[rest.length - 1] as string);
class AppLogger extends ConsoleLogger {
  override log(message: any, ...rest: any[]) {
    if (!isPaymentContext(rest)) super.log(message, ...rest);
  }
  override debug(message: any, ...rest: any[]) {
    if (!isPaymentContext(rest)) super.debug(message, ...rest);
  }
  override verbose(message: any, ...rest: any[]) {
    if (!isPaymentContext(rest)) super.verbose(message, ...rest);
  }
}

/** What `fn` writes to stdout and stderr. */
async function printed(fn: () => Promise<void>): Promise<string> {
  const chunks: string[] = [];
  const out = process.stdout.write;
  const err = process.stderr.write;
  const capture = (chunk: unknown) => (chunks.push(String(chunk)), true);
  process.stdout.write = capture as typeof process.stdout.write;
  process.stderr.write = capture as typeof process.stderr.write;
  try {
    await fn();
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
  }
  return chunks.join('');
}

describe('webhook delivery log lines', () => {
  let w: WebhookApp;
  let otel: TestOtel | undefined;
  beforeAll(() => disableOtelGlobals());
  afterEach(async () => {
    await w?.close();
    await otel?.reset();
    otel = undefined;
  });

  it('a request that is not verified logs one debug line (code, account); bad signatures are also counted in one warn at most once an hour', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger });
    const event = envelope();
    expect((await postWebhook(w.url, event, { secret: 'whsec_attacker' })).status).toBe(401);
    expect((await postWebhook(w.url, event, { signature: null })).status).toBe(400);
    expect((await postWebhook(w.url, event, { contentType: 'text/plain' })).status).toBe(415);

    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual([
      ['debug', expect.stringMatching(/^Webhook delivery rejected, answered 401 WEBHOOK_SIGNATURE_MISMATCH: account=default; /)],
      ['debug', expect.stringMatching(/^Webhook delivery rejected, answered 400 WEBHOOK_SIGNATURE_MISSING: account=default; /)],
      ['debug', expect.stringMatching(/^Webhook delivery rejected, answered 415 WEBHOOK_UNSUPPORTED_MEDIA_TYPE: account=default; /)],
    ]);
    // nothing from the unverified body: no event id or type
    expect(logger.lines.filter((l) => l.message.includes(String(event.eventId)) || l.message.includes('eventType='))).toEqual([]);
    // a wrong secret would lose the service's events with nothing at the usual levels: said once, counted
    for (let i = 0; i < 3; i++) expect((await postWebhook(w.url, event, { secret: 'whsec_attacker' })).status).toBe(401);
    expect(logger.lines.filter((l) => l.level === 'warn' || l.level === 'error').map((l) => l.message)).toEqual([
      'Webhook deliveries to account default fail the signature check (1 since start; each is logged at debug). If the service ' +
        'sends them, its signing secret is not among those set for the account (option webhookSecret or PAYMENT_WEBHOOK_SECRET); anyone can send such ' +
        'requests, so this is said at most once an hour',
    ]);
  });

  it('handlers without a webhook secret: one warning at boot naming the variable; none once a secret is set', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, payment: { webhookSecret: undefined } });
    const warnings = logger.lines.filter((l) => l.level === 'warn' && l.message.includes('no webhook secret'));
    expect(warnings).toEqual([
      expect.objectContaining({ context: 'PaymentEvents', message: expect.stringContaining("Account 'default' has 2 @OnPaymentEvent handler(s) but no webhook secret (PAYMENT_WEBHOOK_SECRET)") }),
    ]);
    expect((await postWebhook(w.url, envelope())).status).toBe(404);
    await w.close();
    const quiet = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger: quiet });
    expect(quiet.lines.filter((l) => l.message.includes('no webhook secret'))).toEqual([]);
  });

  it("a route without any handler for its account: one warning at boot (its events would be answered 2xx and dropped)", async () => {
    @Injectable()
    class EuOnlyHandlers {
      @OnPaymentEvent('payment.succeeded', { account: 'eu' })
      onEuPaid(): void {}
    }
    const boot = async (providers: Array<Type<unknown>>) => {
      const logger = new CollectingLogger();
      @Module({
        imports: [
          PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', webhookSecret: 'whsec_default' }),
          PaymentModule.forRoot({ account: 'eu', baseUrl: 'http://127.0.0.1:9', webhookSecret: 'whsec_eu' }),
        ],
        providers,
      })
      class NoHandlersModule {}
      const app = await NestFactory.create(NoHandlersModule, { rawBody: true, logger });
      await app.init();
      await app.close();
      return logger.lines.filter((l) => l.level === 'warn' && l.message.includes('no @OnPaymentEvent handler was found')).map((l) => l.message);
    };
    const missing = (account: string, path: string) =>
      `Account '${account}' receives webhooks on /${path} but no @OnPaymentEvent handler was found for it: its events are answered 2xx and dropped, ` +
      "unless a listener on the app's EventEmitter2 hears them. Is the handlers' provider in a module's providers?";
    expect(await boot([])).toEqual([missing('default', 'payments/webhook'), missing('eu', 'payments/eu/webhook')]);
    expect(await boot([EuOnlyHandlers])).toEqual([missing('default', 'payments/webhook')]);
    expect(await boot([EuOnlyHandlers, RecordingHandlers])).toEqual([]);
  });

  it('a host route without a webhook secret answers 500 and says so once at error, then at debug', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, mount: 'host route', payment: { webhookSecret: undefined } });
    for (let i = 0; i < 3; i++) {
      const answer = await postWebhook(w.url, envelope());
      expect(answer.status).toBe(500);
      expect(answer.json.code).toBe('WEBHOOK_SECRET_NOT_CONFIGURED');
    }
    expect(deliveries(logger).map((l) => l.level)).toEqual(['error', 'debug', 'debug']);
    expect(deliveries(logger)[0]!.message).toMatch(/^Webhook delivery rejected, answered 500 WEBHOOK_SECRET_NOT_CONFIGURED: account=default; /);
  });

  it('a host route naming an account no forRoot() registers: counted; the first signed delivery said once at error with the registered names and its signer, the rest at debug', async () => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, mount: 'host route', controllers: [PerAccountWebhookController] });
    // unsigned requests (anyone can send them) neither reach the error level nor use up its one line
    for (const name of ['ATTACKER-TEXT%20run%20this', 'attacker-chosen']) {
      expect(await postWebhook(w.url, envelope(), { path: `hooks/${name}`, signature: null })).toMatchObject({ status: 404, json: { code: 'WEBHOOK_UNKNOWN_ACCOUNT' } });
    }
    // nor does a signed body over 64 KiB: checking one costs a hash per account, and anyone can send them
    const large = envelope('payment.succeeded', { padding: 'x'.repeat(70 * 1024) });
    expect(await postWebhook(w.url, large, { path: 'hooks/large' })).toMatchObject({ status: 404, json: { code: 'WEBHOOK_UNKNOWN_ACCOUNT' } });
    for (const name of ['eu', 'attacker-chosen', 'eu']) {
      expect(await postWebhook(w.url, envelope(), { path: `hooks/${name}` })).toMatchObject({ status: 404, json: { code: 'WEBHOOK_UNKNOWN_ACCOUNT' } });
    }
    const lines = logger.lines.filter((l) => l.context === 'PaymentWebhooks' && l.level !== 'log');
    expect(lines.filter((l) => l.level === 'error')).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          /receive\(\) was called for account "eu", which no PaymentModule.forRoot\(\) registers \(registered: default\): a delivery signed with the secret of account 'default'/,
        ),
      }),
    ]);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    expect(logger.lines.some((l) => l.message.includes('ATTACKER-TEXT'))).toBe(false);
    // one line per delivery: the first signed one's is the error above
    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual(
      Array(5).fill(['debug', expect.stringMatching(/^Webhook delivery rejected, answered 404 WEBHOOK_UNKNOWN_ACCOUNT: account=\(unknown\); /)]),
    );
    // the unknown names are never metric values
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'rejected', code: 'WEBHOOK_UNKNOWN_ACCOUNT', account: '(unknown)', value: 6 },
    ]);
  });

  it('route decorators given with webhookRoute: false are said to apply to nothing, once at boot; none on the module route', async () => {
    const decorate: MethodDecorator = () => undefined;
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, mount: 'host route', payment: { webhookRoute: false, webhookDecorators: [decorate] } });
    expect(logger.lines.filter((l) => l.level === 'warn' && l.context === 'PaymentWebhooks').map((l) => l.message)).toEqual([
      expect.stringMatching(/^Account 'default': webhookDecorators apply to the module's webhook route, which webhookRoute: false turns off/),
    ]);
    await w.close();
    const quiet = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger: quiet, payment: { webhookDecorators: [decorate] } });
    expect(quiet.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('a handler failure logs one error line with eventId, eventType, code and account', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger });
    const event = envelope('payment.failed');
    w.handlers.failNext = 1;
    expect((await postWebhook(w.url, event)).status).toBe(500);
    expect(deliveries(logger)).toEqual([
      {
        level: 'error',
        context: 'PaymentWebhooks',
        message: expect.stringMatching(
          new RegExp(`^Webhook delivery failed, answered 500 WEBHOOK_HANDLER_FAILED: eventId=${event.eventId} eventType=payment.failed account=default; .*RecordingHandlers.onPayment`),
        ),
      },
    ]);
    // the handler's own error, with its stack, is logged by the dispatcher
    expect(logger.lines.filter((l) => l.context === 'PaymentEvents' && l.level === 'error')).toHaveLength(1);
    // the redelivery is handled and logs nothing
    expect((await postWebhook(w.url, event)).status).toBe(200);
    expect(deliveries(logger)).toHaveLength(1);
  });

  it('a handler failing on a client error logs it by class, code and status with its stack frames, no text of the service answer (it echoes request fields), and telemetry the same', async () => {
    otel = await registerTestOtel();
    const stub = await new ClientStubServer().start();
    try {
      const event = envelope('payment.succeeded');
      const trxId = (event.data as { trxId: string }).trxId;
      stub.answer('POST', `/payment/${trxId}/refund`, {
        status: 400,
        body: { status: 'error', code: 'PAY_4000', message: 'recipient account 40817810099910004312 (Ivan Petrov) is blocked', errors: {}, data: [] },
      });
      const logger = new CollectingLogger();
      w = await startWebhookApp({
        adapter: 'express',
        logger,
        payment: { baseUrl: stub.url, clientId: 'cid_review', clientSecret: 'csec_review_secret_value' },
        extraProviders: [RefundingHandler],
      });
      const res = await postWebhook(w.url, event);
      expect(res.status).toBe(500);
      expect(stub.calls(`/payment/${trxId}/refund`).length).toBeGreaterThan(0);
      const metrics = await otel.collect();
      const spans = otel.spans();
      const texts = telemetryTexts(metrics, spans);
      // spans and their exceptions keep the code only
      expect(texts.filter((t) => t.includes('Ivan Petrov'))).toEqual([]);
      // the handler's log line neither
      const leaking = logger.rendered.filter((l) => l.includes('Ivan Petrov'));
      expect(leaking).toEqual([]);
      const line = logger.rendered.find((l) => l.includes('RefundingHandler.onSucceeded failed on payment.succeeded'));
      expect(line).toContain('PaymentValidationError PAY_4000 (HTTP 400)');
      expect(line).toContain('at '); // the stack's frames stay: where the handler called the client
    } finally {
      await stub.stop();
    }
  });

  it('a handler failure whose claim cannot be released (the store went down meanwhile) is still one line, saying so', async () => {
    const redis = await startRedisServer();
    try {
      const logger = new CollectingLogger();
      w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: redis.url } });
      const event = envelope();
      let release!: () => void;
      w.handlers.gate = new Promise<void>((resolve) => (release = resolve));
      w.handlers.failNext = 1;
      const answer = postWebhook(w.url, event);
      await waitFor('the handler started', () => w.handlers.entered === 1);
      await redis.stop();
      release();
      expect((await answer).status).toBe(500);
      // was two lines: a warn of the deduplicator, then the delivery's error
      expect(deliveries(logger)).toEqual([
        expect.objectContaining({
          level: 'error',
          message: expect.stringMatching(/^Webhook delivery failed, answered 500 WEBHOOK_HANDLER_FAILED: .*; its claim could not be released \(.+\): copies are answered 409 until its lease lapses$/),
        }),
      ]);
      expect(logger.lines.filter((l) => l.message.startsWith('Could not release'))).toEqual([]);
    } finally {
      await w.close();
      await redis.stop();
    }
  });

  it('a host route handing receive() the parsed body: 500 WEBHOOK_ROUTE_MISCONFIGURED, counted under its account, the fix logged once', async () => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger, payment: { webhookRoute: false }, controllers: [BodyInsteadOfRequestController] });
    for (let i = 0; i < 2; i++) {
      expect(await postWebhook(w.url, envelope(), { path: 'body-hook' })).toMatchObject({ status: 500, json: { code: 'WEBHOOK_ROUTE_MISCONFIGURED' } });
    }
    // was not counted at all
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'rejected', code: 'WEBHOOK_ROUTE_MISCONFIGURED', account: 'default', value: 2 },
    ]);
    expect(logger.lines.filter((l) => l.level === 'error' && l.message.includes('was given no HTTP request'))).toHaveLength(1);
  });

  it('a delivery of an event already in flight logs one warn line; of 20 copies replayed meanwhile (the same signed bytes), 10 a minute at warn, the rest at debug', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger });
    const event = envelope();
    const raw = JSON.stringify(event);
    const signature = createWebhookSignatureHeader(raw, WEBHOOK_SECRET); // captured once
    let release!: () => void;
    w.handlers.gate = new Promise<void>((resolve) => (release = resolve));
    const first = postWebhook(w.url, raw, { signature });
    await waitFor('the first delivery entered its handler', () => w.handlers.entered > 0);
    for (let i = 0; i < 20; i++) expect((await postWebhook(w.url, raw, { signature })).status).toBe(409);
    release();
    expect((await first).status).toBe(200);
    const line = `Webhook delivery in_flight, answered 409 WEBHOOK_EVENT_IN_FLIGHT: eventId=${event.eventId} eventType=payment.succeeded account=default; This event is being processed by another delivery; retry later`;
    // was 20 warn lines: anyone holding one capture could flood warn while a handler runs
    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual([...Array.from({ length: 10 }, () => ['warn', line]), ...Array.from({ length: 10 }, () => ['debug', line])]);
  });

  it('an event of the other environment replayed 20 times (the same signed bytes): 10 warn lines a minute, the rest at debug', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger }); // a sandbox account
    const event = envelope('payment.succeeded', { environment: 'production' });
    const raw = JSON.stringify(event);
    const signature = createWebhookSignatureHeader(raw, WEBHOOK_SECRET);
    for (let i = 0; i < 20; i++) expect((await postWebhook(w.url, raw, { signature })).json).toEqual({ received: true, ignored: 'environment' });
    const ignored = logger.lines.filter((l) => l.message.startsWith(`Ignored payment.succeeded event ${event.eventId}`));
    // was 20 warn lines
    expect(ignored.map((l) => l.level)).toEqual([...Array.from({ length: 10 }, () => 'warn'), ...Array.from({ length: 10 }, () => 'debug')]);
  });

  it('a failing event replayed 20 times (the same signed bytes): its delivery and handler lines 10 a minute at error, the rest at debug; another event still at error', async () => {
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger });
    const event = envelope('payment.failed');
    const raw = JSON.stringify(event);
    const signature = createWebhookSignatureHeader(raw, WEBHOOK_SECRET);
    w.handlers.failNext = 21;
    for (let i = 0; i < 20; i++) expect((await postWebhook(w.url, raw, { signature })).status).toBe(500);
    const levels = (context: string) => logger.lines.filter((l) => l.context === context && l.message.includes(event.eventId as string)).map((l) => l.level);
    const tenLoud = [...Array.from({ length: 10 }, () => 'error'), ...Array.from({ length: 10 }, () => 'debug')];
    // was 20 + 20 error lines: one capture could flood error
    expect(levels('PaymentWebhooks')).toEqual(tenLoud);
    expect(levels('PaymentEvents')).toEqual(tenLoud);
    const other = envelope('payment.failed');
    expect((await postWebhook(w.url, other)).status).toBe(500);
    expect(logger.lines.filter((l) => l.level === 'error' && l.message.includes(other.eventId as string)).map((l) => l.context).sort()).toEqual(['PaymentEvents', 'PaymentWebhooks']);
  });

  it('an unreachable event store: 503, one error line without the Redis password, counted as unavailable', async () => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    const password = 'redis-pa55word-never-logged';
    w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: `redis://:${password}@127.0.0.1:${await unusedLoopbackPort()}` } });
    const event = envelope();
    const answer = await postWebhook(w.url, event);
    expect(answer.status).toBe(503);
    expect(answer.json.code).toBe('WEBHOOK_STORE_UNAVAILABLE');
    const lines = deliveries(logger);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'error', context: 'PaymentWebhooks' });
    expect(lines[0]!.message).toMatch(
      new RegExp(`^Webhook delivery unavailable, answered 503 WEBHOOK_STORE_UNAVAILABLE: eventId=${event.eventId} eventType=payment.succeeded account=default; .*Redis`),
    );
    // the deduplicator's own line is not repeated for the module's route
    expect(logger.lines.filter((l) => l.message.includes('unavailable while claiming'))).toEqual([]);
    expect(logger.lines.filter((l) => l.message.includes(password))).toEqual([]);
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'unavailable', code: 'WEBHOOK_STORE_UNAVAILABLE', event_type: 'payment.succeeded', account: 'default', value: 1 },
    ]);
  });

  it.each(ADAPTERS)('%s: a body its JSON parser refuses is counted and logged: warn when signed, debug when not', async (adapter) => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter, logger });
    const broken = '{"eventId":"evt_broken","eventType":"payment.succeeded",';
    expect(await postWebhook(w.url, broken)).toMatchObject({ status: 400, json: { code: 'WEBHOOK_INVALID_JSON' } });
    expect(await postWebhook(w.url, broken, { secret: 'whsec_attacker' })).toMatchObject({ status: 400, json: { code: 'WEBHOOK_INVALID_JSON' } });

    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual([
      ['warn', 'Webhook delivery rejected, answered 400 WEBHOOK_INVALID_JSON: account=default; the body parser refused it (not valid JSON); the signature is valid'],
      ['debug', 'Webhook delivery rejected, answered 400 WEBHOOK_INVALID_JSON: account=default; the body parser refused it (not valid JSON)'],
    ]);
    // nothing of the unverified body (a JSON parser's message quotes it)
    expect(logger.lines.filter((l) => l.message.includes('evt_broken') || l.message.includes('payment.succeeded'))).toEqual([]);
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'rejected', code: 'WEBHOOK_INVALID_JSON', account: 'default', value: 2 },
    ]);
    // a refusal the adapter or the route may make (Fastify's parser, Express's route) counts once either way
    expect(await postWebhook(w.url, envelope(), { contentType: 'text/plain' })).toMatchObject({ status: 415, json: { code: 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE' } });
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toContainEqual({
      outcome: 'rejected',
      code: 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE',
      account: 'default',
      value: 1,
    });
    expect(deliveries(logger)).toHaveLength(3);
  });

  it.each(ADAPTERS)("%s: a host middleware's or hook's 4xx on the webhook path is the host's answer: not counted, logged or reshaped as the parser's", async (adapter) => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    // Express: Nest's own exception; Fastify: an error with a status, as Fastify plugins raise them (Nest answers it 500)
    const refusal = (status: number): Error => Object.assign(new Error('address not on the allow-list'), { statusCode: status });
    w = await startWebhookApp({
      adapter,
      logger,
      configure: (nest) => {
        if (adapter === 'express') {
          // an IP allow-list of the host, Express style: next(error) with a status
          nest.use('/payments/webhook', (_req: unknown, _res: unknown, next: (error?: unknown) => void) => next(new ForbiddenException()));
        } else {
          const fastify = nest.getHttpAdapter().getInstance() as FastifyInstance;
          fastify.addHook('preHandler', (request, _reply, done) => done(request.url.startsWith('/payments/webhook') ? refusal(400) : undefined));
        }
      },
    });
    const answer = await postWebhook(w.url, envelope());
    expect(answer.status).toBe(adapter === 'express' ? 403 : 500);
    expect(answer.json?.code).toBeUndefined();
    expect(deliveries(logger)).toEqual([]);
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([]);
    expect(w.handlers.calls).toEqual([]);
  });

  it.each(ADAPTERS)('%s: broken JSON declared latin1 is answered, counted and logged as the 415 of its charset', async (adapter) => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter, logger });
    const broken = '{"eventId":"evt_broken","eventType":"payment.succeeded",';
    const latin1 = { contentType: 'application/json; charset=latin1' };
    expect(await postWebhook(w.url, broken, latin1)).toMatchObject({ status: 415, json: { statusCode: 415, code: 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE' } });
    // Express's parser refuses latin1 before reading the body, so its signature is never checked: debug
    const level = adapter === 'express' ? 'debug' : 'warn';
    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual([[level, expect.stringMatching(/^Webhook delivery rejected, answered 415 WEBHOOK_UNSUPPORTED_MEDIA_TYPE: account=default; /)]]);
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'rejected', code: 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE', account: 'default', value: 1 },
    ]);
  });

  it.each(ADAPTERS)('%s: a signed body refused for its envelope is logged at warn with its eventId and eventType where they are well formed', async (adapter) => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter, logger });
    const badData: Record<string, unknown> = { ...envelope('payment.succeeded'), data: 'not an object' };
    const badType: Record<string, unknown> = { ...envelope('payment.succeeded'), eventType: 'payment.*' };
    for (const body of [badData, badType]) expect(await postWebhook(w.url, body)).toMatchObject({ status: 400, json: { code: 'WEBHOOK_INVALID_ENVELOPE' } });
    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual([
      [
        'warn',
        `Webhook delivery rejected, answered 400 WEBHOOK_INVALID_ENVELOPE: eventId=${String(badData['eventId'])} eventType=payment.succeeded account=default; ` +
          'The webhook body is not a valid event envelope (bad fields: data)',
      ],
      [
        'warn',
        `Webhook delivery rejected, answered 400 WEBHOOK_INVALID_ENVELOPE: eventId=${String(badType['eventId'])} account=default; ` +
          'The webhook body is not a valid event envelope (bad fields: eventType)',
      ],
    ]);
  });

  it("express: a body over its parser's limit (100 kB) is counted, and the first one says how to raise the limit", async () => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    w = await startWebhookApp({ adapter: 'express', logger });
    const large = envelope('payment.succeeded', { padding: 'x'.repeat(150_000) });
    expect(await postWebhook(w.url, large)).toMatchObject({ status: 413, json: { code: 'WEBHOOK_BODY_TOO_LARGE' } });
    expect(await postWebhook(w.url, large)).toMatchObject({ status: 413, json: { code: 'WEBHOOK_BODY_TOO_LARGE' } });

    expect(deliveries(logger).map((l) => [l.level, l.message])).toEqual([
      ['warn', expect.stringMatching(/^Webhook delivery rejected, answered 413 WEBHOOK_BODY_TOO_LARGE: account=default; .*useBodyParser\('json', \{ limit \}\).* and webhookMaxBodyBytes/)],
      ['debug', expect.stringMatching(/^Webhook delivery rejected, answered 413 WEBHOOK_BODY_TOO_LARGE: account=default; /)],
    ]);
    expect(counterPoints(await otel.collect(), PaymentMetricName.WEBHOOK_REQUESTS)).toEqual([
      { outcome: 'rejected', code: 'WEBHOOK_BODY_TOO_LARGE', account: 'default', value: 2 },
    ]);
  });

  it("the README's per-context logger drops the module's debug and log lines and keeps its errors", async () => {
    const output = await printed(async () => {
      w = await startWebhookApp({ adapter: 'express', logger: new AppLogger() });
      expect((await postWebhook(w.url, envelope(), { secret: 'whsec_attacker' })).status).toBe(401);
      w.handlers.failNext = 1;
      expect((await postWebhook(w.url, envelope('payment.failed'))).status).toBe(500);
      await w.close();
    });
    expect(output).toContain('Nest application successfully started'); // other contexts still print
    expect(output).not.toContain('handler(s) registered'); // PaymentEvents, log
    expect(output).not.toContain('WEBHOOK_SIGNATURE_MISMATCH'); // PaymentWebhooks, debug
    expect(output).toContain('WEBHOOK_HANDLER_FAILED'); // PaymentWebhooks, error
  });
});
