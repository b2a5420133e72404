// Several merchant accounts in one app, against the simulator serving three merchants:
// the default account (sandbox), 'eu' (sandbox) and 'us' (live). Real HTTP both ways.
import 'reflect-metadata';
import { Injectable, type INestApplication, Module, Version, VersioningType } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import { getPaymentGatewayToken, getPaymentOptionsToken, InjectPaymentGateway } from '../../lib/accounts/payment-account.tokens.js';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { PaymentApiError } from '../../lib/client/payment-api.errors.js';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import type { ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent, PaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { buildPaymentEvent, PaymentServiceSimulator } from '../../lib/testing/index.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';

const MERCHANTS = {
  default: { merchantId: 1, clientId: 'default-shop', clientSecret: 'default-secret', webhookSecret: 'whsec_default', mode: 'sandbox' as const },
  eu: { merchantId: 2, clientId: 'eu-shop', clientSecret: 'eu-secret', webhookSecret: 'whsec_eu', mode: 'sandbox' as const },
  us: { merchantId: 3, clientId: 'us-shop', clientSecret: 'us-secret', webhookSecret: 'whsec_us', mode: 'live' as const },
};

@Injectable()
class AccountHandlers {
  readonly euOnly: string[] = [];
  readonly all: Array<{ account: string; eventId: string; trxId: string; canonicalStatus?: string }> = [];

  @OnPaymentEvent('payment.succeeded', { account: 'eu' })
  onEuPaid(event: PaymentEvent<'payment.succeeded'>): void {
    this.euOnly.push(`${event.account}:${event.eventId}`);
  }

  @OnPaymentEvent('payment.*')
  onAnyPayment(event: AnyPaymentEvent): void {
    const data = event.data as { trxId?: string };
    this.all.push({ account: event.account, eventId: event.eventId, trxId: String(data.trxId), canonicalStatus: event.canonicalStatus });
  }
}

@Injectable()
class Checkout {
  constructor(
    readonly payments: PaymentGatewayService,
    @InjectPaymentGateway('eu') readonly eu: PaymentGatewayService,
    @InjectPaymentGateway('us') readonly us: PaymentGatewayService,
  ) {}
}

function accountModule(account: keyof typeof MERCHANTS, baseUrl: string, extra: Record<string, unknown> = {}) {
  const m = MERCHANTS[account];
  return PaymentModule.forRoot({
    ...(account === 'default' ? {} : { account }),
    baseUrl,
    environment: m.mode === 'live' ? 'live' : 'sandbox',
    clientId: m.clientId,
    clientSecret: m.clientSecret,
    webhookSecret: m.webhookSecret,
    ...extra,
  });
}

async function post(url: string, body: object, secret: string): Promise<{ status: number; json: any }> {
  const raw = JSON.stringify(body);
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': createWebhookSignatureHeader(raw, secret) },
    body: raw,
  });
  return { status: response.status, json: await response.json().catch(() => undefined) };
}

describe('several merchant accounts in one app', () => {
  const sim = new PaymentServiceSimulator({ merchants: Object.values(MERCHANTS), rateLimits: false });
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    await sim.start();
    @Module({
      imports: [
        // the named accounts first: the class token must still be the default account's
        accountModule('eu', sim.url, { reconcile: true }),
        accountModule('us', sim.url),
        accountModule('default', sim.url),
      ],
      providers: [AccountHandlers, Checkout],
    })
    class AppModule {}
    app = await NestFactory.create(AppModule, new ExpressAdapter(), { rawBody: true, logger: false });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    sim.setWebhookUrl(1, `${url}/payments/webhook`);
    sim.setWebhookUrl(2, `${url}/payments/eu/webhook`);
    sim.setWebhookUrl(3, `${url}/payments/us/webhook`);
  });
  afterAll(async () => {
    await app?.close();
    await sim.stop();
  });

  it('injects each account by its token; the class token is always the default account, whatever the import order', () => {
    const checkout = app.get(Checkout);
    expect(app.get(PaymentGatewayService)).toBe(checkout.payments);
    expect(app.get(getPaymentGatewayToken('eu'))).toBe(checkout.eu);
    expect(new Set([checkout.payments, checkout.eu, checkout.us]).size).toBe(3);
    expect(app.get<ResolvedPaymentOptions>(getPaymentOptionsToken('us'))).toMatchObject({ account: 'us', environment: 'live' });
    expect(app.get<ResolvedPaymentOptions>(getPaymentOptionsToken())).toMatchObject({ account: 'default', environment: 'sandbox' });
  });

  it("authenticates each account with its own credentials, on its own environment", async () => {
    sim.clearRequests();
    const checkout = app.get(Checkout);
    const [d, eu, us] = await Promise.all([
      checkout.payments.createPayment({ amount: '10', currency: 'USD', custom: 'default-order' }),
      checkout.eu.createPayment({ amount: '11', currency: 'EUR', custom: 'eu-order' }),
      checkout.us.createPayment({ amount: '12', currency: 'USD', custom: 'us-order' }),
    ]);
    expect(sim.payment(d.trxId!)).toMatchObject({ merchantId: 1 });
    expect(sim.payment(eu.trxId!)).toMatchObject({ merchantId: 2 });
    expect(sim.payment(us.trxId!)).toMatchObject({ merchantId: 3 });
    const tokenCalls = sim.requests.filter((r) => r.path.endsWith('/authentication/token'));
    const clientIds = tokenCalls.map((r) => `${(r.body as { client_id: string }).client_id} ${r.path.startsWith('/sandbox') ? 'sandbox' : 'live'}`);
    expect(new Set(clientIds)).toEqual(new Set(['default-shop sandbox', 'eu-shop sandbox', 'us-shop live']));
    // an account reads only its own merchant's payments (the service answers PAY_2001 to the others)
    await expect(checkout.eu.getPaymentStatus(d.trxId!)).rejects.toMatchObject({ code: 'PAY_2001' });
    await expect(checkout.payments.getPaymentStatus(d.trxId!)).resolves.toMatchObject({ trxId: d.trxId });
  });

  it("delivers each merchant's events to its own route; account-bound handlers hear only their account", async () => {
    const handlers = app.get(AccountHandlers);
    const checkout = app.get(Checkout);
    sim.scriptNextPayment('succeed');
    const eu = await checkout.eu.createPayment({ amount: '20', currency: 'EUR', custom: 'eu-2' });
    sim.scriptNextPayment('succeed');
    const d = await checkout.payments.createPayment({ amount: '21', currency: 'USD', custom: 'default-2' });
    sim.scriptNextPayment('succeed');
    const us = await checkout.us.createPayment({ amount: '22', currency: 'USD', custom: 'us-2' });
    await sim.waitForDeliveries({ timeoutMs: 10_000 });
    expect(sim.deliveryLog.every((d) => d.status === 200)).toBe(true);

    const accountsOf = (trxId: string) => [...new Set(handlers.all.filter((e) => e.trxId === trxId).map((e) => e.account))];
    expect(accountsOf(eu.trxId!)).toEqual(['eu']);
    expect(accountsOf(d.trxId!)).toEqual(['default']);
    expect(accountsOf(us.trxId!)).toEqual(['us']);
    const euSucceeded = sim.events.find((e) => e.eventType === 'payment.succeeded' && (e.data as { trxId: string }).trxId === eu.trxId)!;
    expect(handlers.euOnly).toEqual([`eu:${euSucceeded.eventId}`]);
    // reconciliation of 'eu' events ran with the eu client (another client would get PAY_2001)
    const reconciled = handlers.all.find((e) => e.eventId === euSucceeded.eventId)!;
    expect(reconciled.canonicalStatus).toBe('SUCCESS');
  });

  it("rejects a delivery signed with another account's secret (401), and handles one eventId once per account", async () => {
    const event = buildPaymentEvent('payment.succeeded', { trxId: 'trx_shared' });
    expect(await post(`${url}/payments/webhook`, event, MERCHANTS.eu.webhookSecret)).toMatchObject({ status: 401 });
    expect(await post(`${url}/payments/eu/webhook`, event, MERCHANTS.default.webhookSecret)).toMatchObject({ status: 401 });
    const live = { ...event, environment: 'production' };
    expect(await post(`${url}/payments/us/webhook`, live, MERCHANTS.eu.webhookSecret)).toMatchObject({ status: 401 });

    expect(await post(`${url}/payments/webhook`, event, MERCHANTS.default.webhookSecret)).toMatchObject({ status: 200, json: { received: true } });
    expect(await post(`${url}/payments/eu/webhook`, event, MERCHANTS.eu.webhookSecret)).toMatchObject({
      status: 503, // eu reconciles: trx_shared does not exist for the eu merchant
    });
    expect(await post(`${url}/payments/us/webhook`, live, MERCHANTS.us.webhookSecret)).toMatchObject({ status: 200, json: { received: true } });
    expect(await post(`${url}/payments/webhook`, event, MERCHANTS.default.webhookSecret)).toMatchObject({ json: { duplicate: true } });
    expect(await post(`${url}/payments/us/webhook`, live, MERCHANTS.us.webhookSecret)).toMatchObject({ json: { duplicate: true } });
    const handled = app.get(AccountHandlers).all.filter((e) => e.eventId === event.eventId).map((e) => e.account);
    expect(handled.sort()).toEqual(['default', 'us']);
  });

  it('says which account an error belongs to', async () => {
    const error = await app.get(Checkout).eu.getPaymentStatus('trx_nowhere').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentApiError);
    expect(error).toMatchObject({ code: 'PAY_2001', account: 'eu' });
    expect((error as Error).message).toContain("account 'eu'");
  });
});

@Injectable()
class EuCheckout {
  constructor(
    readonly payments: PaymentGatewayService,
    @InjectPaymentGateway('eu') readonly eu: PaymentGatewayService,
  ) {}
}

describe('named accounts in tests', () => {
  it('Test.overrideProvider(getPaymentGatewayToken(name)) replaces one account, and only it', async () => {
    const fake = { createPayment: async () => ({ trxId: 'trx_fake' }) };
    @Module({ imports: [accountModule('eu', 'http://127.0.0.1:9'), accountModule('default', 'http://127.0.0.1:9')], providers: [EuCheckout] })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(getPaymentGatewayToken('eu'))
      .useValue(fake)
      .compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    expect(moduleRef.get(EuCheckout).eu).toBe(fake);
    expect(moduleRef.get(EuCheckout).payments).toBeInstanceOf(PaymentGatewayService);
    await moduleRef.close();
  });

  it("Test.overrideProvider(getPaymentOptionsToken(name)) gives the account other options; it stays registered (a handler bound to it boots)", async () => {
    @Injectable()
    class EuHandler {
      @OnPaymentEvent('payment.succeeded', { account: 'eu' })
      onPaid(): void {}
    }
    @Module({ imports: [accountModule('eu', 'http://127.0.0.1:9'), accountModule('default', 'http://127.0.0.1:9')], providers: [EuCheckout, EuHandler] })
    class AppModule {}
    const options = resolvePaymentOptions({ baseUrl: 'http://127.0.0.1:8', webhookSecret: 'whsec_test' }, {}, 'eu');
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(getPaymentOptionsToken('eu'))
      .useValue(options)
      .compile();
    moduleRef.useLogger(false);
    await moduleRef.init(); // a handler bound to an account nobody registered would stop the boot here
    expect(moduleRef.get(PaymentAccountRegistry).require('eu').options).toBe(options);
    expect(moduleRef.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu')).apiBaseUrl).toContain('127.0.0.1:8');
    await moduleRef.close();
  });

  it("an override holding another account's options says so, rather than 'registered twice'", async () => {
    @Module({ imports: [accountModule('eu', 'http://127.0.0.1:9'), accountModule('default', 'http://127.0.0.1:9')] })
    class AppModule {}
    const defaults = resolvePaymentOptions({ baseUrl: 'http://127.0.0.1:8' }, {}, 'default');
    const boot = Test.createTestingModule({ imports: [AppModule] }).overrideProvider(getPaymentOptionsToken('eu')).useValue(defaults).compile();
    await expect(boot).rejects.toThrow("the options provided for nestjs-payment-gateway:eu:options are those of account 'default': resolve them with account 'eu'");
  });
});

@Injectable()
class HostEmitterListener {
  readonly heard: string[] = [];

  @OnEvent('payment-gateway.payment.succeeded')
  onPaid(event: AnyPaymentEvent): void {
    this.heard.push(`${event.account}:${event.eventId}`);
  }
}

describe("each account's own webhook settings", () => {
  let app: INestApplication;
  let url: string;
  const twoMinutesAgo = () => Math.floor(Date.now() / 1000) - 120;

  beforeAll(async () => {
    process.env.PAYMENT_EU_WEBHOOK_TOLERANCE_SECONDS = '60';
    try {
      @Module({
        imports: [EventEmitterModule.forRoot(), accountModule('eu', 'http://127.0.0.1:9'), accountModule('default', 'http://127.0.0.1:9')],
        providers: [HostEmitterListener],
      })
      class AppModule {}
      app = await NestFactory.create(AppModule, new ExpressAdapter(), { rawBody: true, logger: false });
      await app.listen(0, '127.0.0.1');
    } finally {
      delete process.env.PAYMENT_EU_WEBHOOK_TOLERANCE_SECONDS;
    }
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  it('checks the signature timestamp against the tolerance of the account (PAYMENT_EU_WEBHOOK_TOLERANCE_SECONDS), not another one', async () => {
    const event = buildPaymentEvent('payment.succeeded', { trxId: 'trx_old' });
    const raw = JSON.stringify(event);
    const send = (path: string, secret: string) =>
      fetch(`${url}/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-signature': createWebhookSignatureHeader(raw, secret, twoMinutesAgo()) },
        body: raw,
      }).then(async (r) => ({ status: r.status, json: await r.json() }));
    // signed 120 s ago: inside the default account's 300 s, outside eu's 60 s
    expect(await send('payments/eu/webhook', MERCHANTS.eu.webhookSecret)).toMatchObject({
      status: 401,
      json: { code: 'WEBHOOK_TIMESTAMP_OUT_OF_TOLERANCE' },
    });
    expect(await send('payments/webhook', MERCHANTS.default.webhookSecret)).toMatchObject({ status: 200, json: { received: true } });
  });

  it("re-emits a named account's event on the host's EventEmitter2 under the usual name, with the account on the event", async () => {
    const event = buildPaymentEvent('payment.succeeded', { trxId: 'trx_emitted' });
    expect(await post(`${url}/payments/eu/webhook`, event, MERCHANTS.eu.webhookSecret)).toMatchObject({ status: 200 });
    expect(app.get(HostEmitterListener).heard).toContain(`eu:${event.eventId}`);
  });
});

describe('an app with named accounts only', () => {
  it('has no PaymentGatewayService under the class token: a named account never answers to it', async () => {
    @Module({ imports: [accountModule('eu', 'http://127.0.0.1:9')] })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    moduleRef.useLogger(false);
    expect(moduleRef.get(getPaymentGatewayToken('eu'))).toBeInstanceOf(PaymentGatewayService);
    expect(() => moduleRef.get(PaymentGatewayService, { strict: false })).toThrow();
    await moduleRef.close();
  });
});

describe('two accounts whose routes meet only under the app\'s versioning', () => {
  const sim = new PaymentServiceSimulator({ merchants: Object.values(MERCHANTS), rateLimits: false });
  beforeAll(() => sim.start());
  afterAll(() => sim.stop());

  /** Boots an app of the default and 'eu' accounts (each its own route settings); `undefined` when it refused to start. */
  async function boot(
    routes: { default: Record<string, unknown>; eu: Record<string, unknown> },
    versioning?: Parameters<INestApplication['enableVersioning']>[0],
  ): Promise<{ app?: INestApplication; error?: unknown }> {
    @Module({ imports: [accountModule('default', sim.url, routes.default), accountModule('eu', sim.url, routes.eu)], providers: [AccountHandlers] })
    class AppModule {}
    let app: INestApplication | undefined;
    try {
      app = await NestFactory.create(AppModule, new ExpressAdapter(), { rawBody: true, logger: false, abortOnError: false });
      if (versioning) app.enableVersioning(versioning);
      await app.listen(0, '127.0.0.1');
      return { app };
    } catch (error) {
      await app?.close().catch(() => undefined);
      return { error };
    }
  }

  it("refuses to start when a URI version makes one account's path the other's ('hooks' with Version('1') beside 'v1/hooks')", async () => {
    const { app, error } = await boot({ default: { webhookPath: 'hooks', webhookDecorators: [Version('1')] }, eu: { webhookPath: 'v1/hooks' } }, { type: VersioningType.URI });
    await app?.close();
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    expect((error as Error).message).toContain("accounts 'default' and 'eu' both receive webhooks on '/v1/hooks'");
  });

  it('serves two accounts on one path told apart by their URI versions, each with its own secret and handlers', async () => {
    const { app, error } = await boot(
      { default: { webhookPath: 'hooks', webhookDecorators: [Version('1')] }, eu: { webhookPath: 'hooks', webhookDecorators: [Version('2')] } },
      { type: VersioningType.URI },
    );
    expect(error).toBeUndefined();
    try {
      const url = `http://127.0.0.1:${(app!.getHttpServer().address() as { port: number }).port}`;
      const handlers = app!.get(AccountHandlers);
      const euEvent = buildPaymentEvent('payment.succeeded', { trxId: 'trx_v2' });
      expect(await post(`${url}/v2/hooks`, euEvent, MERCHANTS.eu.webhookSecret)).toMatchObject({ status: 200 });
      expect(await post(`${url}/v1/hooks`, euEvent, MERCHANTS.eu.webhookSecret)).toMatchObject({ status: 401 });
      const defaultEvent = buildPaymentEvent('payment.succeeded', { trxId: 'trx_v1' });
      expect(await post(`${url}/v1/hooks`, defaultEvent, MERCHANTS.default.webhookSecret)).toMatchObject({ status: 200 });
      expect(handlers.all.map((e) => `${e.account} ${e.trxId}`)).toEqual(['eu trx_v2', 'default trx_v1']);
    } finally {
      await app?.close();
    }
  });

  it('refuses the same two routes when the app has no versioning (Nest then serves both at /hooks)', async () => {
    const { app, error } = await boot({ default: { webhookPath: 'hooks', webhookDecorators: [Version('1')] }, eu: { webhookPath: 'hooks', webhookDecorators: [Version('2')] } });
    await app?.close();
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    expect((error as Error).message).toContain("both receive webhooks on '/hooks'");
  });
});
