import 'reflect-metadata';
import {
  Controller,
  type DynamicModule,
  HttpCode,
  Injectable,
  type INestApplication,
  type LoggerService,
  Module,
  type ModuleMetadata,
  Param,
  Post,
  type Provider,
  Req,
  type Type,
  Version,
  VERSION_NEUTRAL,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import express from 'express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import type { PaymentModuleRootOptions } from '../../lib/payment.module-definition.js';
import { PaymentWebhookReceiver } from '../../lib/webhooks/payment-webhook.receiver.js';
import type { PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { buildEvent } from '../../lib/testing/event-builders.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';

export type AdapterKind = 'express' | 'fastify';
export const ADAPTERS: AdapterKind[] = ['express', 'fastify'];

/**
 * Where the webhook route lives: the module's own route, or a route of the host's own
 * controller (`webhookRoute: false`) that hands the request to `PaymentWebhookReceiver`.
 */
export type WebhookMount = 'module route' | 'host route';
export const MOUNTED_ADAPTERS: Array<[AdapterKind, WebhookMount]> = [
  ['express', 'module route'],
  ['fastify', 'module route'],
  ['express', 'host route'],
  ['fastify', 'host route'],
];

/** The host-mounted receiver, at the module route's default path (version-neutral, as the README's example). */
@Controller('payments')
export class HostWebhookController {
  constructor(private readonly receiver: PaymentWebhookReceiver) {}

  @Post('webhook')
  @HttpCode(200)
  @Version(VERSION_NEUTRAL)
  receive(@Req() request: PaymentWebhookRequest) {
    return this.receiver.receive(request);
  }
}

/** A host route per account name, taken from the URL: `POST /hooks/:account`. */
@Controller('hooks')
export class PerAccountWebhookController {
  constructor(private readonly receiver: PaymentWebhookReceiver) {}

  @Post(':account')
  @HttpCode(200)
  receive(@Req() request: PaymentWebhookRequest, @Param('account') account: string) {
    return this.receiver.receive(request, account);
  }
}

/** What an app needs for `mount`: module options that turn the module's route off, and the host's controller. */
export function webhookMount(mount: WebhookMount | undefined): { payment: { webhookRoute?: false }; controllers: Array<typeof HostWebhookController> } {
  return mount === 'host route' ? { payment: { webhookRoute: false }, controllers: [HostWebhookController] } : { payment: {}, controllers: [] };
}

export const WEBHOOK_SECRET = 'whsec_e2e_primary';

/** Records what reached handlers; a test may make the next calls fail. */
@Injectable()
export class RecordingHandlers {
  readonly calls: Array<{ handler: string; event: AnyPaymentEvent }> = [];
  /** Number of upcoming `payment.*` handler calls that throw. */
  failNext = 0;
  /** Resolves the next `payment.*` handler call only when released (for concurrency tests). */
  gate?: Promise<void>;
  /** `payment.*` handler calls started (before the gate). */
  entered = 0;

  @OnPaymentEvent('payment.*')
  async onPayment(event: AnyPaymentEvent): Promise<void> {
    this.entered++;
    if (this.gate) await this.gate;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('handler failure injected by the test');
    }
    this.calls.push({ handler: 'payment.*', event });
  }

  @OnPaymentEvent('*')
  onAny(event: AnyPaymentEvent): void {
    this.calls.push({ handler: '*', event });
  }

  count(handler: string, eventId?: string): number {
    return this.calls.filter((c) => c.handler === handler && (eventId === undefined || c.event.eventId === eventId)).length;
  }
}

export interface WebhookAppOptions {
  adapter: AdapterKind;
  payment?: PaymentModuleRootOptions;
  /** @default 'module route' */
  mount?: WebhookMount;
  /** Replaces `PaymentModule.forRoot(...)` (e.g. a `forRootAsync()`); `payment` is then ignored. */
  module?: DynamicModule;
  rawBody?: boolean;
  /** `false`: Nest registers no body parser (the test's `configure` brings its own). @default true */
  bodyParser?: boolean;
  extraProviders?: Provider[];
  extraImports?: NonNullable<ModuleMetadata['imports']>;
  controllers?: Array<Type<unknown>>;
  logger?: LoggerService | false;
  globalPrefix?: string;
  /** Settings of the Express app, set before Nest builds its routes (e.g. `'strict routing': true`). */
  expressSettings?: Record<string, unknown>;
  /** Options of the `FastifyAdapter` (e.g. `onProtoPoisoning`). */
  fastifyOptions?: ConstructorParameters<typeof FastifyAdapter>[0];
  /** Runs after create, before listen (e.g. `useBodyParser`). */
  configure?: (app: INestApplication) => unknown;
}

export interface WebhookApp {
  app: INestApplication;
  url: string;
  handlers: RecordingHandlers;
  close(): Promise<void>;
}

/** Boots a real app with `PaymentModule.forRoot()` on 127.0.0.1:0. */
export async function startWebhookApp(opts: WebhookAppOptions): Promise<WebhookApp> {
  const mounted = webhookMount(opts.mount);
  @Module({
    imports: [
      opts.module ??
        PaymentModule.forRoot({
          baseUrl: 'http://127.0.0.1:9',
          webhookSecret: WEBHOOK_SECRET,
          ...mounted.payment,
          ...opts.payment,
        }),
      ...(opts.extraImports ?? []),
    ],
    controllers: [...mounted.controllers, ...(opts.controllers ?? [])],
    providers: [RecordingHandlers, ...(opts.extraProviders ?? [])],
  })
  class AppModule {}

  const adapter = opts.adapter === 'express' ? expressAdapter(opts.expressSettings) : new FastifyAdapter(opts.fastifyOptions);
  const app = await NestFactory.create(AppModule, adapter, {
    rawBody: opts.rawBody ?? true,
    bodyParser: opts.bodyParser ?? true,
    logger: opts.logger ?? false,
  });
  if (opts.globalPrefix) app.setGlobalPrefix(opts.globalPrefix);
  await opts.configure?.(app);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return {
    app,
    url: `http://127.0.0.1:${address.port}`,
    handlers: app.get(RecordingHandlers),
    close: () => app.close(),
  };
}

/** An Express adapter over an app with `settings` (set before the adapter creates the app's router). */
function expressAdapter(settings: Record<string, unknown> = {}): ExpressAdapter {
  const instance = express();
  for (const [name, value] of Object.entries(settings)) instance.set(name, value);
  return new ExpressAdapter(instance);
}

let counter = 0;

/** A valid spec 2.1 envelope (the simulator's builder) with a per-process unique eventId. */
export function envelope(eventType = 'payment.succeeded', overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  const data = {
    trxId: `trx_${counter}`,
    token: `tok_${counter}`,
    amount: '10.00000000',
    currency: 'USD',
    status: 'SUCCESS',
    custom: `order-${counter}`,
    merchantId: 1,
  };
  return { ...buildEvent(eventType, data, { eventId: `evt_e2e_${process.pid}_${counter}` }), ...overrides };
}

export interface PostOptions {
  secret?: string;
  timestamp?: number;
  signature?: string | null;
  contentType?: string | null;
  path?: string;
  headers?: Record<string, string>;
}

/** POSTs `body` (object → JSON) signed like the service does. */
export async function postWebhook(baseUrl: string, body: unknown, opts: PostOptions = {}): Promise<{ status: number; json: any; text: string }> {
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? 'application/json';
  if (opts.signature !== null) {
    headers['x-service-signature'] =
      opts.signature ?? createWebhookSignatureHeader(raw, opts.secret ?? WEBHOOK_SECRET, opts.timestamp ?? Math.floor(Date.now() / 1000));
  }
  const response = await fetch(`${baseUrl}/${opts.path ?? 'payments/webhook'}`, { method: 'POST', headers, body: raw });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}
