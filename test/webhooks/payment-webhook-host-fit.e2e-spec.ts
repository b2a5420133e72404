// The module as a guest in a typical production app: global auth guard and throttler,
// a global exception filter, the host's own ConfigModule and EventEmitterModule.
import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type ArgumentsHost,
  type CallHandler,
  type CanActivate,
  Catch,
  Controller,
  type ExecutionContext,
  Get,
  HttpException,
  Injectable,
  Module,
  type NestInterceptor,
  SetMetadata,
  UseFilters,
  UseGuards,
  ValidationPipe,
  VersioningType,
} from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE, BaseExceptionFilter, DiscoveryService, HttpAdapterHost, NestFactory, Reflector } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { map, type Observable } from 'rxjs';
import { EventEmitter2, EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { PaymentEventHandlerError } from '../../lib/events/payment-event.errors.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { PaymentWebhookExceptionFilter } from '../../lib/webhooks/payment-webhook-exception.filter.js';
import { PaymentWebhookHttpException } from '../../lib/webhooks/payment-webhook-http.exception.js';
import { WebhookHandlerFailedError } from '../../lib/webhooks/payment-webhook.errors.js';
import { startChildApp } from '../support/child-app.js';
import { ADAPTERS, envelope, PerAccountWebhookController, postWebhook, startWebhookApp, WEBHOOK_SECRET, type WebhookApp } from '../support/webhooks-app.js';

// What a host app typically has: a JWT-style global guard with a @Public() escape hatch.
const IS_PUBLIC = 'host:is-public';
const Public = () => SetMetadata(IS_PUBLIC, true);

@Injectable()
class HostAuthGuard implements CanActivate {
  constructor(protected readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.isPublic(context)) return true;
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return request.headers.authorization === 'Bearer host-token';
  }

  protected isPublic(context: ExecutionContext): boolean {
    return this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]) === true;
  }
}

/** A host guard on the route that refuses a request naming a status in `x-host-refuse` (a rate limiter's 429, a 403). */
@Injectable()
class HeaderRefusingGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const refuse = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-host-refuse'];
    if (refuse === '429') throw new HttpException('Too Many Requests', 429);
    if (refuse === 'coded') throw new HttpException({ statusCode: 403, code: 'HOST_IP_BLOCKED', message: 'Blocked' }, 403);
    if (refuse === 'moved') throw new HttpException({ moved: 'to the new host' }, 307);
    return refuse === undefined; // false: Nest's ForbiddenException
  }
}

/** A host guard that reads `@Public()` from the controller class only, as some auth libraries do. */
@Injectable()
class ClassLevelAuthGuard extends HostAuthGuard {
  protected override isPublic(context: ExecutionContext): boolean {
    return this.reflector.get<boolean>(IS_PUBLIC, context.getClass()) === true;
  }
}

@Controller('orders')
class HostOrdersController {
  @Get()
  list(): { orders: string[] } {
    return { orders: [] };
  }
}

/** A Sentry-style global filter: records every exception, then answers as Nest would. */
@Catch()
class RecordingExceptionFilter extends BaseExceptionFilter {
  static readonly seen: unknown[] = [];

  override catch(exception: unknown, host: ArgumentsHost): void {
    RecordingExceptionFilter.seen.push(exception);
    super.catch(exception, host);
  }
}

/** A filter that answers in the host's own shape (as in Nest's docs). */
@Catch()
class HostShapedExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const status = exception instanceof HttpException ? exception.getStatus() : 500;
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { ok: false, status, path: 'host-shaped' }, status);
  }
}

/** A filter whose body is `{ error }` alone: keys Nest's default body also has, but not its shape. */
@Catch()
class ErrorOnlyExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const status = exception instanceof HttpException ? exception.getStatus() : 500;
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { error: exception instanceof Error ? exception.message : 'failed' }, status);
  }
}

/** A filter that answers every 4xx as a 400 in Nest's default body shape, in its own words. */
@Catch(HttpException)
class Every4xxAs400Filter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: HttpException, host: ArgumentsHost): void {
    const status = exception.getStatus() >= 500 ? exception.getStatus() : 400;
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { statusCode: status, message: 'Request rejected' }, status);
  }
}

@Injectable()
class HostListeners {
  pings = 0;
  paymentEvents: string[] = [];

  @OnEvent('host.ping')
  onPing(): void {
    this.pings++;
  }

  @OnEvent('payment-gateway.payment.succeeded')
  onPayment(event: AnyPaymentEvent): void {
    this.paymentEvents.push(event.eventId);
  }
}

/** A host interceptor that stamps every answer body (audit fields, envelopes, ...). */
@Injectable()
class StampingInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((body: Record<string, unknown>) => {
        body.servedBy = 'host';
        return body;
      }),
    );
  }
}

async function getJson(url: string, headers: Record<string, string> = {}): Promise<number> {
  return (await fetch(url, { headers })).status;
}

/** A provider of a host module that is not global: what a route guard of the host typically needs. */
@Injectable()
class RouteAudit {
  readonly seen: string[] = [];
}

@Module({ providers: [RouteAudit], exports: [RouteAudit] })
class AuditModule {}

@Injectable()
class AuditingGuard implements CanActivate {
  constructor(private readonly audit: RouteAudit) {}

  canActivate(context: ExecutionContext): boolean {
    this.audit.seen.push(context.getHandler().name);
    return true;
  }
}

describe.each(ADAPTERS)('the module in a production-like host app on %s', (adapter) => {
  describe('global auth guard reading metadata through Reflector', () => {
    it('answers every signed webhook 403 without webhookDecorators (the problem)', async () => {
      const w = await startWebhookApp({
        adapter,
        controllers: [HostOrdersController],
        extraProviders: [{ provide: APP_GUARD, useClass: HostAuthGuard }],
      });
      try {
        expect((await postWebhook(w.url, envelope())).status).toBe(403);
        expect(w.handlers.calls).toHaveLength(0);
      } finally {
        await w.close();
      }
    });

    it('lets the service through with webhookDecorators: [Public()], and keeps guarding the host routes', async () => {
      const w = await startWebhookApp({
        adapter,
        payment: { webhookDecorators: [Public()] },
        controllers: [HostOrdersController],
        extraProviders: [{ provide: APP_GUARD, useClass: HostAuthGuard }],
      });
      try {
        const body = envelope();
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { duplicate: true } });
        // a bad signature is still the module's answer, not the guard's
        expect(await postWebhook(w.url, envelope(), { secret: 'whsec_other' })).toMatchObject({ status: 401 });
        expect(await getJson(`${w.url}/orders`)).toBe(403);
        expect(await getJson(`${w.url}/orders`, { authorization: 'Bearer host-token' })).toBe(200);
      } finally {
        await w.close();
      }
    });

    it('runs a webhookDecorators entry that wraps the method (tracing, auditing), with the route\'s status kept', async () => {
      const wrapped: string[] = [];
      // a typical wrapping decorator: replaces the method, calls the original
      const Audited = (label: string): MethodDecorator => (_target, key, descriptor: PropertyDescriptor) => {
        const original = descriptor.value as (...args: unknown[]) => Promise<unknown>;
        descriptor.value = async function (this: unknown, ...args: unknown[]) {
          wrapped.push(`${label}: before ${String(key)}`);
          const result = await original.apply(this, args);
          wrapped.push(`${label}: after ${String(key)}`);
          return result;
        };
      };
      // applied in the order given, as Nest's applyDecorators does: the last one wraps the others
      const w = await startWebhookApp({ adapter, payment: { webhookDecorators: [Public(), Audited('inner'), Audited('outer')] } });
      try {
        const body = envelope();
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
        expect(wrapped).toEqual(['outer: before receive', 'inner: before receive', 'inner: after receive', 'outer: after receive']);
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
      } finally {
        await w.close();
      }
    });

    it('lets the service through a guard that reads the class only with webhookClassDecorators: [Public()] (webhookDecorators alone: 403)', async () => {
      const methodOnly = await startWebhookApp({
        adapter,
        payment: { webhookDecorators: [Public()] },
        extraProviders: [{ provide: APP_GUARD, useClass: ClassLevelAuthGuard }],
      });
      try {
        expect((await postWebhook(methodOnly.url, envelope())).status).toBe(403);
      } finally {
        await methodOnly.close();
      }
      const w = await startWebhookApp({
        adapter,
        payment: { webhookClassDecorators: [Public()] },
        controllers: [HostOrdersController],
        extraProviders: [{ provide: APP_GUARD, useClass: ClassLevelAuthGuard }],
      });
      try {
        const body = envelope();
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { duplicate: true } });
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
        expect(await getJson(`${w.url}/orders`)).toBe(403);
      } finally {
        await w.close();
      }
    });

    it.each([
      [
        'wraps every method of the class',
        ((target: Function) => {
          const prototype = target.prototype as Record<string, (...args: unknown[]) => unknown>;
          for (const name of Object.getOwnPropertyNames(prototype).filter((n) => n !== 'constructor')) {
            const original = prototype[name]!;
            prototype[name] = function (this: unknown, ...args: unknown[]) {
              return original.apply(this, args);
            };
          }
        }) as ClassDecorator,
      ],
      [
        'returns a subclass overriding receive',
        ((target: new (...args: any[]) => { receive(...args: unknown[]): unknown }) =>
          class extends target {
            override receive(...args: unknown[]) {
              return super.receive(...args);
            }
          }) as unknown as ClassDecorator,
      ],
    ])('keeps the status, version and webhookDecorators of the route when a class decorator %s', async (_label, decorator) => {
      const w = await startWebhookApp({
        adapter,
        payment: { webhookDecorators: [Public()], webhookClassDecorators: [decorator] },
        extraProviders: [{ provide: APP_GUARD, useClass: HostAuthGuard }],
      });
      try {
        const body = envelope();
        // 200 (HttpCode), not 201; through the guard (Public() of webhookDecorators), not 403
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
      } finally {
        await w.close();
      }
    });

    it('takes webhookDecorators beside the factory of forRootAsync', async () => {
      const w = await startWebhookApp({
        adapter,
        module: PaymentModule.forRootAsync({
          useFactory: () => ({ baseUrl: 'http://127.0.0.1:9', webhookSecret: WEBHOOK_SECRET }),
          webhookDecorators: [Public()],
        }),
        extraProviders: [{ provide: APP_GUARD, useClass: HostAuthGuard }],
      });
      try {
        expect(await postWebhook(w.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
      } finally {
        await w.close();
      }
    });
  });

  describe('global ThrottlerGuard (@nestjs/throttler) with a limit of 3 a minute', () => {
    // In a child process: @nestjs/throttler is CommonJS and cannot load inside jest's ESM sandbox with NestJS 12.
    const start = (skip: boolean, throttlers = '', secondAccount = false) =>
      startChildApp('test/webhooks/fixtures/throttled-host-app.ts', {
        HOST_ADAPTER: adapter,
        HOST_WEBHOOK_SECRET: WEBHOOK_SECRET,
        HOST_SKIP_THROTTLE: skip ? '1' : '0',
        ...(throttlers === '' ? {} : { HOST_THROTTLERS: throttlers }),
        ...(secondAccount ? { HOST_SECOND_ACCOUNT: '1' } : {}),
      });

    it('throttles the webhook route like any other without SkipThrottle() (the problem)', async () => {
      const host = await start(false);
      try {
        const statuses = [];
        for (let i = 0; i < 5; i++) statuses.push((await postWebhook(host.url!, envelope())).status);
        expect(statuses).toEqual([200, 200, 200, 429, 429]);
      } finally {
        await host.stop();
      }
    });

    it("counts each account's route apart, as two controllers of the host (the throttler's key is the class's name)", async () => {
      const host = await start(false, '', true);
      try {
        const statuses = { default: [] as number[], eu: [] as number[] };
        for (let i = 0; i < 3; i++) statuses.default.push((await postWebhook(host.url!, envelope())).status);
        // was [429, 429, 429]: every account's controller class was named PaymentWebhookController
        for (let i = 0; i < 3; i++) statuses.eu.push((await postWebhook(host.url!, envelope(), { path: 'payments/eu/webhook' })).status);
        statuses.default.push((await postWebhook(host.url!, envelope())).status);
        expect(statuses).toEqual({ default: [200, 200, 200, 429], eu: [200, 200, 200] });
      } finally {
        await host.stop();
      }
    });

    it.each([
      ['SkipThrottle()', ''],
      ['SkipThrottle({ short: true, long: true }) naming the named throttlers (the README recipe)', 'short,long'],
    ])('handles a burst of 100 webhooks with webhookDecorators: [%s], and still throttles the host route', async (_label, throttlers) => {
      const host = await start(true, throttlers);
      try {
        const bodies = Array.from({ length: 100 }, () => envelope());
        const answers = await Promise.all(bodies.map((body) => postWebhook(host.url!, body)));
        expect(answers.map((a) => a.status)).toEqual(Array(100).fill(200));
        const handled = (await (await fetch(`${host.url}/handled`)).json()) as { eventIds: string[] };
        expect(handled.eventIds.sort()).toEqual(bodies.map((b) => b.eventId as string).sort());
        const hostStatuses = [];
        for (let i = 0; i < 5; i++) hostStatuses.push(await getJson(`${host.url}/orders`));
        expect(hostStatuses).toEqual([200, 200, 200, 429, 429]);
      } finally {
        await host.stop();
      }
    }, 60_000);
  });

  describe('global exception filter (APP_FILTER)', () => {
    let w: WebhookApp;
    beforeAll(async () => {
      w = await startWebhookApp({ adapter, extraProviders: [{ provide: APP_FILTER, useClass: RecordingExceptionFilter }] });
    });
    afterAll(async () => {
      await w?.close();
    });
    beforeEach(() => {
      RecordingExceptionFilter.seen.length = 0;
    });

    it('receives a handler failure with its cause, while the answer stays 500 with its code', async () => {
      w.handlers.failNext = 1;
      const body = envelope();
      const answer = await postWebhook(w.url, body);
      expect(answer).toMatchObject({ status: 500, json: { statusCode: 500, code: 'WEBHOOK_HANDLER_FAILED' } });
      expect(RecordingExceptionFilter.seen).toHaveLength(1);
      const seen = RecordingExceptionFilter.seen[0] as PaymentWebhookHttpException;
      expect(seen).toBeInstanceOf(HttpException);
      expect(seen).toBeInstanceOf(PaymentWebhookHttpException);
      expect(seen.getStatus()).toBe(500);
      // the chain an APM walks: HttpException → WebhookHandlerFailedError → PaymentEventHandlerError → the handler's error
      const failed = seen.cause as WebhookHandlerFailedError;
      expect(failed).toBeInstanceOf(WebhookHandlerFailedError);
      const handlers = failed.cause as PaymentEventHandlerError;
      expect(handlers).toBeInstanceOf(PaymentEventHandlerError);
      expect(handlers.eventId).toBe(body.eventId);
      expect(String((handlers.failures[0]!.error as Error).message)).toContain('handler failure injected by the test');
      // the redelivery runs the handlers and succeeds
      expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
    });

    it('receives rejections too, with the same statuses and codes as without a filter', async () => {
      expect(await postWebhook(w.url, envelope(), { secret: 'whsec_other' })).toMatchObject({
        status: 401,
        json: { statusCode: 401, code: 'WEBHOOK_SIGNATURE_MISMATCH' },
      });
      expect(RecordingExceptionFilter.seen).toHaveLength(1);
      expect((RecordingExceptionFilter.seen[0] as HttpException).getStatus()).toBe(401);
    });

    it("receives the body parser's refusals as well (broken JSON), answered with their webhook code", async () => {
      // the same words on both adapters, never the parser's (which may quote the unverified body)
      expect(await postWebhook(w.url, '{"eventId": broken', { signature: null })).toMatchObject({
        status: 400,
        json: { statusCode: 400, code: 'WEBHOOK_INVALID_JSON', message: 'The webhook body is not valid JSON' },
      });
      expect(RecordingExceptionFilter.seen).toHaveLength(1);
      expect((RecordingExceptionFilter.seen[0] as HttpException).getStatus()).toBe(400);
    });

    it("keeps the answers of a filter that writes the host's own body shape, parser refusals included", async () => {
      const shaped = await startWebhookApp({ adapter, extraProviders: [{ provide: APP_FILTER, useClass: HostShapedExceptionFilter }] });
      try {
        const hostBody = (status: number) => ({ status, json: { ok: false, status, path: 'host-shaped' } });
        expect(await postWebhook(shaped.url, envelope(), { signature: null })).toMatchObject(hostBody(400));
        expect(await postWebhook(shaped.url, { eventId: 'evt_no_type' })).toMatchObject(hostBody(400));
        expect(await postWebhook(shaped.url, '{"eventId": broken', { signature: null })).toMatchObject(hostBody(400));
        expect(await postWebhook(shaped.url, envelope(), { contentType: 'text/plain' })).toMatchObject(hostBody(415));
        expect(await postWebhook(shaped.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
      } finally {
        await shaped.close();
      }
    });

    it("keeps the status and words of a filter that writes Nest's body shape its own way, parser refusals included", async () => {
      const normalising = await startWebhookApp({ adapter, extraProviders: [{ provide: APP_FILTER, useClass: Every4xxAs400Filter }] });
      try {
        const hostBody = { status: 400, json: { statusCode: 400, message: 'Request rejected' } };
        for (const refused of [
          await postWebhook(normalising.url, envelope(), { contentType: 'application/xml' }), // the parser's 415
          await postWebhook(normalising.url, '{"eventId": broken'), // the parser's 400
          await postWebhook(normalising.url, envelope(), { contentType: 'application/json; charset=latin1' }),
          await postWebhook(normalising.url, envelope(), { signature: null }), // the route's own refusal
        ]) {
          expect(refused).toMatchObject(hostBody);
          expect(Object.keys(refused.json as object).sort()).toEqual(['message', 'statusCode']);
        }
        expect(await postWebhook(normalising.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
      } finally {
        await normalising.close();
      }
    });

    it('keeps the answers of a filter whose body is { error } alone, parser refusals included', async () => {
      const shaped = await startWebhookApp({ adapter, extraProviders: [{ provide: APP_FILTER, useClass: ErrorOnlyExceptionFilter }] });
      try {
        const broken = await postWebhook(shaped.url, '{"eventId": broken', { signature: null });
        // the host's shape, with the words of the adapter's parser on Fastify (as documented)
        expect(broken).toMatchObject({ status: 400, json: { error: expect.stringMatching(/JSON/) } });
        expect(Object.keys(broken.json as object)).toEqual(['error']);
        const xml = await postWebhook(shaped.url, envelope(), { contentType: 'application/xml' });
        expect(xml.status).toBe(415);
        expect(Object.keys(xml.json as object)).toEqual(['error']);
        expect(await postWebhook(shaped.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
      } finally {
        await shaped.close();
      }
    });

    it("webhookDecorators: [UseFilters(PaymentWebhookExceptionFilter)] answers the route's rejections and failures itself, beside a host filter of another shape", async () => {
      const own = await startWebhookApp({
        adapter,
        payment: { webhookDecorators: [UseFilters(PaymentWebhookExceptionFilter)] },
        extraProviders: [{ provide: APP_FILTER, useClass: HostShapedExceptionFilter }],
      });
      try {
        expect(await postWebhook(own.url, envelope(), { secret: 'whsec_other' })).toMatchObject({
          status: 401,
          json: { statusCode: 401, code: 'WEBHOOK_SIGNATURE_MISMATCH' },
        });
        own.handlers.failNext = 1;
        expect(await postWebhook(own.url, envelope())).toMatchObject({ status: 500, json: { statusCode: 500, code: 'WEBHOOK_HANDLER_FAILED' } });
        expect(await postWebhook(own.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
        // refused by the body parser before the route: the host's filter answers, as documented
        expect(await postWebhook(own.url, '{"eventId": broken', { signature: null })).toMatchObject({ status: 400, json: { path: 'host-shaped' } });
      } finally {
        await own.close();
      }
    });

    it("PaymentWebhookExceptionFilter names another enhancer's 4xx WEBHOOK_REQUEST_REFUSED (not a bad request), keeps a code the host gave, and lets a non-error answer through", async () => {
      const own = await startWebhookApp({
        adapter,
        payment: { webhookDecorators: [UseFilters(PaymentWebhookExceptionFilter), UseGuards(HeaderRefusingGuard)] },
      });
      try {
        for (const [refuse, status] of [['429', 429], ['403', 403]] as const) {
          expect(await postWebhook(own.url, envelope(), { headers: { 'x-host-refuse': refuse } })).toMatchObject({
            status,
            json: { statusCode: status, code: 'WEBHOOK_REQUEST_REFUSED' },
          });
        }
        expect(await postWebhook(own.url, envelope(), { headers: { 'x-host-refuse': 'coded' } })).toMatchObject({
          status: 403,
          json: { statusCode: 403, code: 'HOST_IP_BLOCKED' },
        });
        // not an error: the answer goes out as the guard made it (it was dressed as a refusal, with a code)
        const moved = await postWebhook(own.url, envelope(), { headers: { 'x-host-refuse': 'moved' } });
        expect([moved.status, moved.json]).toEqual([307, { moved: 'to the new host' }]);
        expect(own.handlers.calls).toHaveLength(0);
        expect(await postWebhook(own.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
      } finally {
        await own.close();
      }
    });
  });

  describe("the host's ConfigModule choices stand", () => {
    let dir: string;
    let cwd: string;
    const touched = ['HOSTFIT_DOTENV_MARKER', 'HOSTFIT_CUSTOM_MARKER', 'PAYMENT_WEBHOOK_PATH'];
    beforeEach(() => {
      cwd = process.cwd();
      dir = mkdtempSync(join(tmpdir(), 'payment-host-fit-'));
      // A .env in the working directory, as a host app has one.
      writeFileSync(join(dir, '.env'), 'HOSTFIT_DOTENV_MARKER=from-dotenv\nPAYMENT_WEBHOOK_PATH=from/dotenv\n');
      writeFileSync(join(dir, 'custom.env'), 'HOSTFIT_CUSTOM_MARKER=from-custom\nPAYMENT_WEBHOOK_PATH=from/custom\n');
      for (const name of touched) delete process.env[name];
      process.chdir(dir);
    });
    afterEach(() => {
      process.chdir(cwd);
      rmSync(dir, { recursive: true, force: true });
      for (const name of touched) delete process.env[name];
    });

    it('ignoreEnvFile: true → nothing from .env reaches process.env, and the module reads the real environment', async () => {
      const w = await startWebhookApp({ adapter, extraImports: [ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true })] });
      try {
        expect(process.env.HOSTFIT_DOTENV_MARKER).toBeUndefined();
        expect(process.env.PAYMENT_WEBHOOK_PATH).toBeUndefined();
        expect((await postWebhook(w.url, envelope())).status).toBe(200);
        expect((await postWebhook(w.url, envelope(), { path: 'from/dotenv' })).status).toBe(404);
      } finally {
        await w.close();
      }
    });

    it("envFilePath → the host's file is used and .env is not", async () => {
      const w = await startWebhookApp({ adapter, extraImports: [ConfigModule.forRoot({ isGlobal: true, envFilePath: 'custom.env' })] });
      try {
        expect(process.env.HOSTFIT_DOTENV_MARKER).toBeUndefined();
        expect(process.env.HOSTFIT_CUSTOM_MARKER).toBe('from-custom');
        expect((await postWebhook(w.url, envelope(), { path: 'from/custom' })).status).toBe(200);
        expect((await postWebhook(w.url, envelope())).status).toBe(404);
      } finally {
        await w.close();
      }
    });

    it('no ConfigModule in the host → the module reads process.env and never loads .env', async () => {
      const w = await startWebhookApp({ adapter });
      try {
        expect(process.env.HOSTFIT_DOTENV_MARKER).toBeUndefined();
        expect((await postWebhook(w.url, envelope())).status).toBe(200);
      } finally {
        await w.close();
      }
    });
  });

  describe("the host's versioning", () => {
    const VERSIONINGS = [
      ['a version header with a default version', { type: VersioningType.HEADER, header: 'x-api-version', defaultVersion: '1' }],
      ['a media type version with a default version', { type: VersioningType.MEDIA_TYPE, key: 'v=', defaultVersion: '1' }],
      ['URI versions with a default version', { type: VersioningType.URI, defaultVersion: '1' }],
    ] as const;
    // the host route is the README's example, @Version(VERSION_NEUTRAL) included: without it a
    // header or media type version makes every delivery a 404, and a URI version moves the route
    it.each(
      (['module route', 'host route'] as const).flatMap((mount) => VERSIONINGS.map(([label, versioning]) => [mount, label, versioning] as const)),
    )('%s, %s: the route stays at its path and takes the service, which sends no version', async (mount, _label, versioning) => {
      const w = await startWebhookApp({ adapter, mount, configure: (app) => app.enableVersioning(versioning) });
      try {
        const body = envelope();
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
      } finally {
        await w.close();
      }
    });
  });

  it('a route guard in webhookDecorators that injects a provider of a non-global host module: webhookImports makes it resolvable', async () => {
    const payment = { webhookDecorators: [UseGuards(AuditingGuard)], webhookImports: [AuditModule] };
    const w = await startWebhookApp({ adapter, payment, extraImports: [AuditModule] });
    try {
      expect(await postWebhook(w.url, envelope())).toMatchObject({ status: 200, json: { received: true } });
      expect(w.app.get(RouteAudit, { strict: false }).seen).toHaveLength(1);
    } finally {
      await w.close();
    }
  });

  it.each(['module route', 'host route'] as const)(
    "a strict global ValidationPipe (whitelist, forbidNonWhitelisted, transform) leaves the %s's request alone: 200, the whole event delivered",
    async (mount) => {
      const pipe = new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true });
      const w = await startWebhookApp({ adapter, mount, extraProviders: [{ provide: APP_PIPE, useValue: pipe }] });
      try {
        const body = envelope('payment.succeeded', { extraTopLevel: 'kept' });
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
        const [call] = w.handlers.calls.filter((c) => c.handler === 'payment.*');
        expect(call?.event).toMatchObject({ eventId: body.eventId, extraTopLevel: 'kept', data: body.data });
      } finally {
        await w.close();
      }
    },
  );

  it('a global interceptor that adds to the answer body: 200 with its field, for handled and duplicate deliveries alike', async () => {
    const w = await startWebhookApp({ adapter, extraProviders: [{ provide: APP_INTERCEPTOR, useClass: StampingInterceptor }] });
    try {
      const body = envelope();
      expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true, servedBy: 'host' } });
      const again = await postWebhook(w.url, body);
      expect(again).toMatchObject({ status: 200, json: { received: true, duplicate: true, servedBy: 'host' } });
      // and no answer leaks into the next one
      expect((await postWebhook(w.url, envelope())).json).toEqual({ received: true, servedBy: 'host' });
    } finally {
      await w.close();
    }
  });

  it('a host route keyed on the account name answers 404 WEBHOOK_UNKNOWN_ACCOUNT for a name no forRoot() registers', async () => {
    const w = await startWebhookApp({ adapter, mount: 'host route', controllers: [PerAccountWebhookController] });
    try {
      expect(await postWebhook(w.url, envelope(), { path: 'hooks/default' })).toMatchObject({ status: 200 });
      expect(await postWebhook(w.url, envelope(), { path: 'hooks/nope' })).toMatchObject({
        status: 404,
        json: { statusCode: 404, code: 'WEBHOOK_UNKNOWN_ACCOUNT' },
      });
    } finally {
      await w.close();
    }
  });

  it('one forRoot() result serving two apps in turn: the second, without a secret, has no route (404)', async () => {
    let secret: string | undefined = WEBHOOK_SECRET;
    @Module({ imports: [PaymentModule.forRootAsync({ useFactory: () => ({ baseUrl: 'http://127.0.0.1:9', webhookSecret: secret }) })] })
    class SharedAppModule {}
    const boot = async () => {
      const app = await NestFactory.create(SharedAppModule, adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
        rawBody: true,
        logger: false,
      });
      await app.listen(0, '127.0.0.1');
      return { app, url: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}` };
    };
    const first = await boot();
    try {
      expect((await postWebhook(first.url, envelope())).status).toBe(200);
    } finally {
      await first.app.close();
    }
    secret = undefined;
    const second = await boot();
    try {
      expect((await postWebhook(second.url, envelope())).status).toBe(404);
    } finally {
      await second.app.close();
    }
  });

  describe("the host's EventEmitterModule", () => {
    it('wildcard: false → one EventEmitter2, the host listener runs once per emit and once per payment event', async () => {
      const w = await startWebhookApp({
        adapter,
        extraImports: [EventEmitterModule.forRoot({ wildcard: false })],
        extraProviders: [HostListeners],
      });
      try {
        const emitter = w.app.get(EventEmitter2);
        // the host's emitter is the only one: the module registers none of its own
        const emitters = w.app.get(DiscoveryService).getProviders().filter((p) => p.instance instanceof EventEmitter2);
        expect(emitters.map((p) => p.instance)).toEqual([emitter]);
        emitter.emit('host.ping');
        emitter.emit('host.ping');
        const listeners = w.app.get(HostListeners);
        expect(listeners.pings).toBe(2);
        const body = envelope();
        expect((await postWebhook(w.url, body)).status).toBe(200);
        expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { duplicate: true } });
        expect(listeners.paymentEvents).toEqual([body.eventId]);
        // the handlers ran once too
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
      } finally {
        await w.close();
      }
    });

    it("global: false (the emitter only in the host's module) → its listeners still hear every payment event, once", async () => {
      const w = await startWebhookApp({
        adapter,
        extraImports: [EventEmitterModule.forRoot({ global: false })],
        extraProviders: [HostListeners],
      });
      try {
        const body = envelope();
        expect((await postWebhook(w.url, body)).status).toBe(200);
        // before: the module could not inject a non-global emitter, emitted nothing, and the event was recorded handled
        expect(w.app.get(HostListeners).paymentEvents).toEqual([body.eventId]);
      } finally {
        await w.close();
      }
    });
  });
});
