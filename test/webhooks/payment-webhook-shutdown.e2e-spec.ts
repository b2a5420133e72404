import 'reflect-metadata';
import { connect } from 'node:net';
import { type BeforeApplicationShutdown, Controller, HttpCode, Injectable, Post, Req, UseGuards, UseInterceptors } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Redis } from 'ioredis';
import { getPaymentGatewayToken } from '../../lib/accounts/payment-account.tokens.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { SANDBOX_CLIENT } from '../support/client-simulator.js';
import { ClientStubServer, success } from '../support/client-stub-server.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import { PaymentWebhookSignatureGuard } from '../../lib/webhooks/payment-webhook-signature.guard.js';
import { PaymentWebhookIdempotencyInterceptor } from '../../lib/webhooks/payment-webhook-idempotency.interceptor.js';
import { WebhookIdempotencyKey } from '../../lib/webhooks/webhook-idempotency-key.decorator.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET, type WebhookApp, type WebhookMount } from '../support/webhooks-app.js';

/** A handler that sends a refund (to a slow service) before it returns. */
@Injectable()
class CallingHandler {
  readonly entered = new Map<string, number>();
  readonly done = new Map<string, number>();

  constructor(private readonly client: PaymentGatewayService) {}

  @OnPaymentEvent('payment.succeeded')
  async handle(event: AnyPaymentEvent): Promise<void> {
    this.entered.set(event.eventId, (this.entered.get(event.eventId) ?? 0) + 1);
    await this.client.refundPayment('trx_1', { amount: '1' });
    this.done.set(event.eventId, (this.done.get(event.eventId) ?? 0) + 1);
  }
}

// Nest runs module-destroy hooks, then drains the HTTP server, then runs shutdown hooks: a
// webhook still in its handler during the drain keeps its claim and its client sockets.
describe('inline webhooks during app.close()', () => {
  let redis: TestRedisServer;
  let service: ClientStubServer;
  let closing: WebhookApp;
  let other: WebhookApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    service = await new ClientStubServer().start();
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const payment = { redisUrl: redis.url, webhookLeaseMs: 1000, baseUrl: service.url, clientId, clientSecret };
    closing = await startWebhookApp({ adapter: 'express', payment, extraProviders: [CallingHandler] });
    other = await startWebhookApp({ adapter: 'express', payment, extraProviders: [CallingHandler] });
  });
  afterAll(async () => {
    await closing?.close().catch(() => undefined);
    await other?.close();
    await service?.stop();
    await redis?.stop();
  });

  it('a handler running while the app closes keeps its claim and finishes its service call: handled once, answered 200', async () => {
    // the refund's answer takes 4 lease lengths (a refund is not retried after a reset: the socket must live)
    service.answer('POST', '/payment/trx_1/refund', { ...success({ refundUid: 'rfd_1' }, 201), delayMs: 4000 });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    const handlersOf = (w: WebhookApp) => w.app.get(CallingHandler);

    const delivery = postWebhook(closing.url, event);
    await waitFor('the handler is sending the refund', () => service.calls('/payment/trx_1/refund').length === 1);
    const closed = closing.close();
    await sleep(1800); // past the lease: only renewal keeps the claim
    const copy = await postWebhook(other.url, event);
    expect(copy.status).toBe(409);
    expect((await delivery).status).toBe(200);
    await closed;
    expect(handlersOf(closing).done.get(id)).toBe(1);
    expect(handlersOf(other).entered.get(id)).toBeUndefined();
    expect(service.calls('/payment/trx_1/refund')).toHaveLength(1);
    expect(await postWebhook(other.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
  });
});

// A delivery whose sender hung up is no longer part of the HTTP server's drain: app.close()
// itself waits for its handlers (webhookShutdownTimeoutMs), or its completion could not be
// recorded once the store closed, and the service's retry would run the handlers again.
// With isGlobal: true Nest shuts the account's module down last, after the module that holds
// the shared Redis connections: those must stay open while the account's store uses them.
describe.each<[WebhookMount, boolean]>([
  ['module route', false],
  ['host route', false],
  ['module route', true],
])('inline webhooks whose sender hung up, during app.close() (%s, isGlobal: %s)', (mount, isGlobal) => {
  let redis: TestRedisServer;
  const apps: WebhookApp[] = [];
  const services: ClientStubServer[] = [];
  const startService = async () => {
    const service = await new ClientStubServer().start();
    services.push(service);
    return service;
  };
  const start = async (service: ClientStubServer, payment: Record<string, unknown> = {}, extraProviders: Array<new (...args: never[]) => unknown> = []) => {
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const app = await startWebhookApp({
      adapter: 'express',
      mount,
      payment: { redisUrl: redis.url, webhookLeaseMs: 1000, baseUrl: service.url, clientId, clientSecret, isGlobal, ...payment },
      extraProviders: [CallingHandler, ...extraProviders],
    });
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    await Promise.all(services.map((service) => service.stop()));
    await redis?.stop();
  });

  it('close() waits for the handler, which keeps its claim and records completion: the retry is a duplicate, one refund', async () => {
    const service = await startService();
    const closing = await start(service);
    const other = await start(service);
    service.answer('POST', '/payment/trx_1/refund', { ...success({ refundUid: 'rfd_1' }, 201), delayMs: 3000 });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;

    await deliverAndCut(closing.url, event, waitFor('the handler is sending the refund', () => service.calls('/payment/trx_1/refund').length === 1));
    const startedClosing = Date.now();
    const closed = closing.close();
    await sleep(1800); // past the lease: only renewal keeps the claim
    expect((await postWebhook(other.url, event)).status).toBe(409);
    await closed;
    expect(Date.now() - startedClosing).toBeGreaterThanOrEqual(2000); // it waited for the refund's answer
    expect(closing.app.get(CallingHandler).done.get(id)).toBe(1);
    // the service's retry after the lease: recorded as processed, not run again
    await sleep(1200);
    expect(await postWebhook(other.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    expect(other.app.get(CallingHandler).entered.get(id)).toBeUndefined();
    expect(service.calls('/payment/trx_1/refund')).toHaveLength(1);
  });
  it("a refund on the wire past webhookShutdownTimeoutMs: close() waits for it anyway (the client drains), so the completion is recorded before the store closes: one refund", async () => {
    const service = await startService();
    const closing = await start(service, { webhookShutdownTimeoutMs: 200 });
    const other = await start(service);
    service.answer('POST', '/payment/trx_1/refund', { ...success({ refundUid: 'rfd_1' }, 201), delayMs: 1500 });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;

    await deliverAndCut(closing.url, event, waitFor('the handler is sending the refund', () => service.calls('/payment/trx_1/refund').length === 1));
    await closing.close();
    expect(closing.app.get(CallingHandler).done.get(id)).toBe(1);
    // the service's retry after the lease: recorded as processed (was lost: the store had closed before the refund's answer)
    await sleep(1200);
    expect(await postWebhook(other.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    expect(service.calls('/payment/trx_1/refund')).toHaveLength(1);
  });

  it('a delivery still claiming its event when close() starts is waited for too: completion recorded, the retry is a duplicate', async () => {
    const service = await startService();
    const closing = await start(service);
    const other = await start(service);
    service.answer('POST', '/payment/trx_1/refund', success({ refundUid: 'rfd_1' }, 201));
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;

    // a slow Redis: the claim (a write) waits 800 ms; close() starts and the sender hangs up meanwhile
    const admin = new Redis(redis.url);
    await admin.call('CLIENT', 'PAUSE', '800', 'WRITE');
    admin.disconnect();
    const delivered = deliverAndCut(closing.url, event, sleep(300));
    await sleep(100);
    const closed = closing.close();
    await delivered;
    await closed;
    // close() waited for the claim, the handler and its completion (the store closed after)
    expect(closing.app.get(CallingHandler).done.get(id)).toBe(1);
    await sleep(1200); // past the lease: a claim left behind would have lapsed
    expect(await postWebhook(other.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    expect(other.app.get(CallingHandler).entered.get(id)).toBeUndefined();
    expect(service.calls('/payment/trx_1/refund')).toHaveLength(1);
  });

  it('a delivery that arrives after the first wait (during a host\'s shutdown delay) is waited for too: one refund', async () => {
    const service = await startService();
    const closing = await start(service, {}, [LoadBalancerDrainDelay]);
    const other = await start(service);
    service.answer('POST', '/payment/trx_1/refund', { ...success({ refundUid: 'rfd_1' }, 201), delayMs: 2500 });
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;

    // nothing runs when close() starts: the module-destroy wait returns at once, and the host's
    // beforeApplicationShutdown delay keeps the server taking requests
    const closed = closing.close();
    await waitFor('the host delays shutdown', () => closing.app.get(LoadBalancerDrainDelay).started);
    await deliverAndCut(closing.url, event, waitFor('the handler is sending the refund', () => service.calls('/payment/trx_1/refund').length === 1));
    await closed;
    // close() waited for the handler and its completion before the store closed
    expect(closing.app.get(CallingHandler).done.get(id)).toBe(1);
    await sleep(1200); // past the lease: a claim left behind would have lapsed
    expect(await postWebhook(other.url, event)).toMatchObject({ status: 200, json: { duplicate: true } });
    expect(other.app.get(CallingHandler).entered.get(id)).toBeUndefined();
    expect(service.calls('/payment/trx_1/refund')).toHaveLength(1);
  });
});

/** A host route of its own with the package's guard and interceptor; its handler takes 1.5 s. */
@Controller('partner')
class SlowPartnerController {
  static readonly done = new Map<string, number>();

  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  async callback(@Req() req: { body: { id: string } }): Promise<{ ok: true }> {
    await sleep(1500);
    SlowPartnerController.done.set(req.body.id, (SlowPartnerController.done.get(req.body.id) ?? 0) + 1);
    return { ok: true };
  }
}

describe('a host route with PaymentWebhookIdempotencyInterceptor, during app.close()', () => {
  let redis: TestRedisServer;
  const apps: WebhookApp[] = [];
  const start = async (extraProviders: Array<new (...args: never[]) => unknown> = []) => {
    const app = await startWebhookApp({ adapter: 'express', payment: { redisUrl: redis.url, webhookLeaseMs: 1000 }, controllers: [SlowPartnerController], extraProviders });
    apps.push(app);
    return app;
  };
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    await redis?.stop();
  });

  it('a delivery that arrives during the host\'s shutdown delay and is cut off is waited for: its key is recorded, the retry is a duplicate', async () => {
    const closing = await start([LoadBalancerDrainDelay]);
    const other = await start();
    const id = `partner-${Date.now()}`;
    const closed = closing.close();
    await waitFor('the host delays shutdown', () => closing.app.get(LoadBalancerDrainDelay).started);
    await deliverAndCut(closing.url, { id }, sleep(200), 'partner/callback');
    await closed;
    expect(SlowPartnerController.done.get(id)).toBe(1);
    await sleep(1200); // past the lease: a claim left behind would have lapsed
    expect(await postWebhook(other.url, { id }, { path: 'partner/callback' })).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(SlowPartnerController.done.get(id)).toBe(1);
  });
});

/**
 * Sends a signed delivery on a raw socket and destroys the socket when `hangUp` resolves (the
 * service's delivery time-out, or a proxy giving up): the connection is surely gone, so the
 * HTTP server's drain does not wait for the request.
 */
async function deliverAndCut(baseUrl: string, event: Record<string, unknown>, hangUp: Promise<void>, path = 'payments/webhook'): Promise<void> {
  const raw = Buffer.from(JSON.stringify(event));
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  socket.write(
    `POST /${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${raw.length}\r\n` +
      `X-Service-Signature: ${createWebhookSignatureHeader(raw, WEBHOOK_SECRET)}\r\n\r\n`,
  );
  socket.write(raw);
  await hangUp;
  socket.destroy();
}

/** The usual graceful-shutdown delay: keeps serving while a load balancer stops sending here. */
@Injectable()
class LoadBalancerDrainDelay implements BeforeApplicationShutdown {
  started = false;

  async beforeApplicationShutdown(): Promise<void> {
    this.started = true;
    await sleep(1000);
  }
}

/** Handlers of two accounts that run until the test lets them go. */
@Injectable()
class HangingHandlers {
  release: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  readonly entered: string[] = [];

  @OnPaymentEvent('payment.succeeded')
  async onDefault(event: AnyPaymentEvent): Promise<void> {
    this.entered.push(event.account);
    await this.gate;
  }
}

describe('app.close() with two accounts', () => {
  it('the accounts share each shutdown step\'s time-out (two accounts do not wait twice as long) and the warning names the events', async () => {
    const logger = new CollectingLogger();
    const shutdown = { webhookShutdownTimeoutMs: 1000 };
    const w = await startWebhookApp({
      adapter: 'express',
      logger,
      payment: shutdown,
      extraImports: [PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', account: 'eu', webhookSecret: WEBHOOK_SECRET, ...shutdown })],
      extraProviders: [HangingHandlers],
    });
    const handlers = w.app.get(HangingHandlers);
    const events = [envelope('payment.succeeded'), envelope('payment.succeeded')];
    try {
      // both senders hang up, so the HTTP drain does not wait for them: only the module's waits do
      await deliverAndCut(w.url, events[0]!, waitFor('default entered', () => handlers.entered.includes('default')));
      await deliverAndCut(w.url, events[1]!, waitFor('eu entered', () => handlers.entered.includes('eu')), 'payments/eu/webhook');
      const started = Date.now();
      await w.close();
      // two steps of 1 s each for both accounts together (was 1 s per account per step: 4 s)
      expect(Date.now() - started).toBeLessThan(3_500);
    } finally {
      handlers.release();
    }
    const warnings = logger.lines.filter((l) => l.level === 'warn' && l.message.includes('still running after')).map((l) => l.message).join('\n');
    expect(warnings).toContain(`default:event:${events[0]!.eventId as string}`);
    expect(warnings).toContain(`eu:event:${events[1]!.eventId as string}`);
  });
});

/**
 * Account eu refunds trx_eu at once, then never returns (until released); the default account
 * works a while, refunds trx_default, then works a while more.
 */
@Injectable()
class TwoAccountRefunds {
  static release: () => void = () => undefined;
  private static readonly gate = new Promise<void>((resolve) => (TwoAccountRefunds.release = resolve));

  constructor(private readonly refs: ModuleRef) {}

  @OnPaymentEvent('payment.succeeded')
  async refund(event: AnyPaymentEvent): Promise<void> {
    const eu = event.account === 'eu';
    if (!eu) await sleep(3500);
    const client = this.refs.get<PaymentGatewayService>(getPaymentGatewayToken(event.account), { strict: false });
    await client.refundPayment(eu ? 'trx_eu' : 'trx_default', { amount: '1' });
    await (eu ? TwoAccountRefunds.gate : sleep(1500));
  }
}

describe('app.close() with two accounts whose deliveries outlive the time-out', () => {
  it("drains the clients of both accounts together: default's refund, asked for while eu's was still on the wire, is not sent, and runs once in the end", async () => {
    const redis = await startRedisServer();
    const service = await new ClientStubServer().start();
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const common = { baseUrl: service.url, clientId, clientSecret, webhookShutdownTimeoutMs: 1000, webhookLeaseMs: 1000, redisUrl: redis.url };
    const start = () =>
      startWebhookApp({
        adapter: 'express',
        payment: common,
        extraImports: [PaymentModule.forRoot({ account: 'eu', webhookSecret: WEBHOOK_SECRET, ...common })],
        extraProviders: [TwoAccountRefunds],
      });
    try {
      service.answer('POST', '/payment/trx_eu/refund', { ...success({ refundUid: 'rfd_eu' }, 201), delayMs: 3000 });
      service.answer('POST', '/payment/trx_default/refund', { ...success({ refundUid: 'rfd_default' }, 201), delayMs: 1000 });
      const w = await start();
      const events = { eu: envelope('payment.succeeded'), default: envelope('payment.succeeded') };
      await deliverAndCut(w.url, events.eu, waitFor('eu sends its refund', () => service.calls('/payment/trx_eu/refund').length === 1), 'payments/eu/webhook');
      await deliverAndCut(w.url, events.default, sleep(200));
      const started = Date.now();
      await w.close();
      // the two waits (1 s each), eu's refund on the wire (about 1 s more), then 1 s: one time-out more, not one per account
      expect(Date.now() - started).toBeLessThan(5_000);
      // default's client was closed with eu's, before default asked (it was sent, and its completion lost, when each account drained in turn)
      expect(service.calls('/payment/trx_default/refund')).toHaveLength(0);
      await sleep(1200); // past the lease: the service's retry, to a restarted app
      const again = await start();
      try {
        expect(await postWebhook(again.url, events.default)).toMatchObject({ status: 200, json: { received: true } });
      } finally {
        await again.close();
      }
      expect(service.calls('/payment/trx_default/refund')).toHaveLength(1);
    } finally {
      TwoAccountRefunds.release();
      await service.stop();
      await redis.stop();
    }
  });
});
