import 'reflect-metadata';
import {
  BadRequestException,
  Body,
  type CallHandler,
  Controller,
  type ExecutionContext,
  GatewayTimeoutException,
  HttpCode,
  Injectable,
  type NestInterceptor,
  type OnModuleDestroy,
  Post,
  Req,
  RequestTimeoutException,
  ServiceUnavailableException,
  Res,
  Scope,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { catchError, type Observable, Observable as ObservableOf, retry, throwError, timeout } from 'rxjs';
import { PaymentWebhookSignatureGuard } from '../../lib/webhooks/payment-webhook-signature.guard.js';
import { PaymentWebhookEnvelopeGuard } from '../../lib/webhooks/payment-webhook-envelope.guard.js';
import { PaymentWebhookReceiver } from '../../lib/webhooks/payment-webhook.receiver.js';
import type { PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { PaymentWebhookIdempotencyInterceptor } from '../../lib/webhooks/payment-webhook-idempotency.interceptor.js';
import { WebhookIdempotencyKey } from '../../lib/webhooks/webhook-idempotency-key.decorator.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { waitFor } from '../support/wait.js';
import { ADAPTERS, envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

const effects: string[] = [];
let failNext = 0;
/** What the next failing call throws. */
let failure: () => Error = () => new Error('partner handler failed');

// A host route of its own (e.g. a partner callback) reusing the package's guard and
// interceptor, with its own deduplication key.
@Controller('partner')
class PartnerCallbackController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  // keyed on the signed body (parsed from the bytes the guard verified), never on a header a replay could change
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id, {
    duplicateResponse: () => ({ ok: true, duplicate: true }),
  })
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  callback(@Req() req: { body: { id: string } }): { ok: true } {
    if (failNext > 0) {
      failNext--;
      throw failure();
    }
    effects.push(req.body.id);
    return { ok: true };
  }
}

/** A host's timeout: rxjs `timeout()` mapped to a 408, as the common recipe writes it. */
@Injectable()
class TimeoutInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      timeout(150),
      catchError((error: unknown) => throwError(() => (error instanceof Error && error.name === 'TimeoutError' ? new RequestTimeoutException() : error))),
    );
  }
}

/** Express's response or Fastify's reply, as a handler that answers by itself (`@Res()`) gets it. */
type OwnResponse = { status(code: number): { json(body: unknown): void }; code?: unknown; send?: unknown };

/** Answers 200 `{ ok: true }` through the adapter's own response object. */
function answerOkByItself(res: OwnResponse): void {
  if (typeof res.code === 'function' && typeof res.send === 'function') (res as unknown as { code(c: number): { send(b: unknown): void } }).code(200).send({ ok: true });
  else res.status(200).json({ ok: true });
}

// Routes assembled so they cannot work: each answers 500 WEBHOOK_ROUTE_MISCONFIGURED (the app's
// fault, logged with the fix), never an answer that blames the sender or holds the event forever.
@Controller('mistakes')
class MisassembledController {
  constructor(private readonly receiver: PaymentWebhookReceiver) {}

  // the receiver deduplicates by itself: behind the interceptor it found its own claim held (409 for good)
  @Post('receiver-behind-interceptor')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  stacked(@Req() request: PaymentWebhookRequest) {
    return this.receiver.receive(request);
  }

  // no guards, no key of its own: was a silent 400 WEBHOOK_IDEMPOTENCY_KEY_MISSING on every delivery
  @Post('interceptor-without-guards')
  @HttpCode(200)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  unguarded() {
    effects.push('unguarded');
    return { ok: true };
  }

  // a copy of a signed delivery passes the guard for twice the tolerance: a key kept 1 s ran it again
  @Post('short-retention')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id, { retentionMs: 1000, leaseMs: 1000 })
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  shortRetention() {
    effects.push('short');
    return { ok: true };
  }

  // the parsed body handed to the receiver: it crashed on the missing headers (500 WEBHOOK_INTERNAL_ERROR)
  @Post('body-instead-of-request')
  @HttpCode(200)
  bodyInstead(@Body() body: PaymentWebhookRequest) {
    return this.receiver.receive(body);
  }

  // a key that is neither text nor a whole number: was 400 WEBHOOK_IDEMPOTENCY_KEY_MISSING, blaming the sender, on every retry
  @Post('object-key')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: unknown }) => req.body as never)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  objectKey() {
    effects.push('object-key');
    return { ok: true };
  }

  // answers through @Res() itself: Nest sends nothing the interceptor returns, so every duplicate hung without an answer
  @Post('own-response')
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  ownResponse(@Res() res: OwnResponse) {
    effects.push('own-response');
    answerOkByItself(res);
  }

  // the same behind a wrapping decorator (tracing, auditing) that replaced the method: @Res() was missed
  // (looked up under the wrapper's name), every duplicate hung and so did app.close()
  @Traced()
  @Post('wrapped-own-response')
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  wrappedOwnResponse(@Res() res: OwnResponse) {
    effects.push('wrapped-own-response');
    answerOkByItself(res);
  }

  // the receiver behind the interceptor with another interceptor between them: its refusal (500) was
  // taken for a possible timeout, so the claim was kept and the retry got 409 instead of the fix
  @Post('receiver-behind-interceptors')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor, TimeoutInterceptor)
  stackedWithInner(@Req() request: PaymentWebhookRequest) {
    return this.receiver.receive(request);
  }

  // the envelope guard alone never reads bytes nobody verified
  @Post('envelope-without-signature')
  @HttpCode(200)
  @UseGuards(PaymentWebhookEnvelopeGuard)
  envelopeAlone() {
    effects.push('envelope-alone');
    return { ok: true };
  }
}

/** A decorator that replaces the method with a wrapper (tracing, auditing) and copies its metadata, as such libraries do. */
function Traced(): MethodDecorator {
  return (_target, _key, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => unknown;
    const traced = function (this: unknown, ...args: unknown[]): unknown {
      return original.apply(this, args);
    };
    for (const key of Reflect.getOwnMetadataKeys(original)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), traced);
    descriptor.value = traced;
    return descriptor;
  };
}

/** An interceptor that changes nothing. */
class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

/** A host's retry: subscribes to what is inside it again after a failure. */
@Injectable()
class RetryOnceInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(retry(1));
  }
}

/** A host's timeout with a retry, outside the idempotency interceptor: the retry subscribes again while the first run goes on. */
@Injectable()
class TimeoutThenRetryInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(timeout(150), retry(1));
  }
}

let retriedRuns = 0;

// The idempotency interceptor inside a retry: the retry's second attempt must claim the key again (the
// first released it), or a copy arriving meanwhile would run the handler beside it.
@Controller('retried')
class RetriedCallbackController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(RetryOnceInterceptor, PaymentWebhookIdempotencyInterceptor)
  async callback(): Promise<{ ok: true }> {
    if (++retriedRuns === 1) throw new Error('the first attempt fails');
    return slowHandler();
  }
}

@Controller('timed-retry')
class TimedRetryController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(TimeoutThenRetryInterceptor, PaymentWebhookIdempotencyInterceptor)
  callback(): Promise<{ ok: true }> {
    return slowHandler();
  }
}

/** Starts what is inside it from a timer made at boot (as a hand-written rate limiter does): the request's async context is not carried. */
@Injectable()
class QueuedStartInterceptor implements NestInterceptor, OnModuleDestroy {
  private readonly waiting: Array<() => void> = [];
  private readonly timer = setInterval(() => this.waiting.splice(0).forEach((start) => start()), 5).unref();
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return new ObservableOf<unknown>((subscriber) => void this.waiting.push(() => void next.handle().subscribe(subscriber)));
  }
  onModuleDestroy(): void {
    clearInterval(this.timer);
  }
}

@Controller('twice-queued')
@UseInterceptors(PaymentWebhookIdempotencyInterceptor)
class TwiceListedQueuedController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard)
  @UseInterceptors(QueuedStartInterceptor, PaymentWebhookIdempotencyInterceptor)
  callback(@Req() request: PaymentWebhookRequest): { ok: true } {
    effects.push(`twice-queued:${String((request as { body?: { eventId?: string } }).body?.eventId)}`);
    return { ok: true };
  }
}

/** The interceptor listed on the class and again on the method (or globally and on the route): the outer one deduplicates. */
@Controller('twice')
@UseInterceptors(PaymentWebhookIdempotencyInterceptor)
class TwiceListedController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  callback(@Req() request: PaymentWebhookRequest): { ok: true } {
    effects.push(`twice:${String((request as { body?: { eventId?: string } }).body?.eventId)}`);
    return { ok: true };
  }
}

/** The same timeout mapped to a 503, as hosts also write it: no status tells it from the handler's own failure. */
@Injectable()
class ServiceUnavailableTimeoutInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      timeout(150),
      catchError((error: unknown) => throwError(() => (error instanceof Error && error.name === 'TimeoutError' ? new ServiceUnavailableException() : error))),
    );
  }
}

let releaseSlow: () => void = () => undefined;
let slowRuns = 0;

/** A handler that runs until the test releases it. */
async function slowHandler(): Promise<{ ok: true }> {
  slowRuns++;
  await new Promise<void>((resolve) => (releaseSlow = resolve));
  return { ok: true };
}

// The timeout inside the idempotency interceptor (listed after it): it ends the request while the handler still runs.
@Controller('slow')
class SlowCallbackController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor, TimeoutInterceptor)
  callback(): Promise<{ ok: true }> {
    return slowHandler();
  }

  @Post('callback-503')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor, ServiceUnavailableTimeoutInterceptor)
  callback503(): Promise<{ ok: true }> {
    return slowHandler();
  }
}

let upstreamTimeouts = 0;
const upstreamRuns: string[] = [];

// The idempotency interceptor innermost: a 504 is the handler's own (its upstream call timed out), released like any failure.
@Controller('upstream')
class UpstreamCallbackController {
  @Post('callback')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  @UseInterceptors(TimeoutInterceptor, PaymentWebhookIdempotencyInterceptor)
  callback(@Req() req: { body: { id: string } }): { ok: true } {
    upstreamRuns.push(req.body.id);
    if (upstreamTimeouts-- > 0) throw new GatewayTimeoutException('the partner API timed out');
    return { ok: true };
  }
}

// The guard's hooks are protected so a host can change one step: here the secret comes from elsewhere.
@Injectable()
class VaultSecretGuard extends PaymentWebhookSignatureGuard {
  protected override getSecrets(): readonly string[] {
    return ['whsec_from_vault'];
  }
}

@Controller('vault')
class VaultController {
  @Post('hook')
  @HttpCode(200)
  @UseGuards(VaultSecretGuard)
  hook(): { ok: true } {
    effects.push('vault');
    return { ok: true };
  }
}

describe.each(ADAPTERS)('reusing the guard and the idempotency interceptor on a host route (%s)', (adapter) => {
  let w: WebhookApp;
  const logger = new CollectingLogger();
  beforeAll(async () => {
    w = await startWebhookApp({
      adapter,
      logger,
      controllers: [PartnerCallbackController, VaultController, MisassembledController, SlowCallbackController, UpstreamCallbackController, TwiceListedController, RetriedCallbackController, TimedRetryController, TwiceListedQueuedController],
      extraProviders: [VaultSecretGuard, TimeoutInterceptor, QueuedStartInterceptor],
    });
  });
  afterAll(async () => {
    await w?.close();
  });
  beforeEach(() => {
    effects.length = 0;
  });

  // what the partner sends: a signed body with its delivery id (and, here, a header the signature does not cover)
  const send = (id: string | undefined, opts: { signature?: string; header?: string } = {}) =>
    postWebhook(w.url, { anything: 'the partner sends', id }, {
      path: 'partner/callback',
      ...(opts.signature ? { signature: opts.signature } : {}),
      headers: { 'x-delivery-id': opts.header ?? id ?? '' },
    });

  it('a route whose building blocks cannot work together answers 500 WEBHOOK_ROUTE_MISCONFIGURED and runs nothing', async () => {
    const misconfigured = { status: 500, json: { code: 'WEBHOOK_ROUTE_MISCONFIGURED' } };
    const event = envelope();
    for (const path of ['mistakes/receiver-behind-interceptor', 'mistakes/interceptor-without-guards', 'mistakes/envelope-without-signature']) {
      expect(await postWebhook(w.url, event, { path })).toMatchObject(misconfigured);
      // the same on the service's retry: nothing ran, nothing holds the event
      expect(await postWebhook(w.url, event, { path })).toMatchObject(misconfigured);
    }
    expect(await postWebhook(w.url, event, { path: 'mistakes/body-instead-of-request' })).toMatchObject(misconfigured);
    expect(await postWebhook(w.url, { id: 'object-1' }, { path: 'mistakes/object-key' })).toMatchObject(misconfigured);
    expect(logger.messages('error')).toContainEqual(expect.stringMatching(/^PaymentWebhookReceiver\.receive\(\) was given no HTTP request/));
    for (let i = 0; i < 2; i++) expect(await postWebhook(w.url, { id: 'own-1' }, { path: 'mistakes/own-response' })).toMatchObject(misconfigured);
    for (let i = 0; i < 2; i++) expect(await postWebhook(w.url, { id: 'own-2' }, { path: 'mistakes/wrapped-own-response' })).toMatchObject(misconfigured);
    for (let i = 0; i < 2; i++) expect(await postWebhook(w.url, event, { path: 'mistakes/receiver-behind-interceptors' })).toMatchObject(misconfigured);
    expect(await postWebhook(w.url, { id: 'short-1' }, { path: 'mistakes/short-retention' })).toMatchObject(misconfigured);
    expect(await postWebhook(w.url, { id: 'short-2' }, { path: 'mistakes/short-retention' })).toMatchObject(misconfigured);
    expect(effects).toEqual([]);
    expect(w.handlers.count('payment.*', String(event.eventId))).toBe(0);
    // the log names the route to fix, once per route however many deliveries reach it
    const fixes = logger.messages('error').filter((line) => line.startsWith('MisassembledController.')).sort();
    expect(fixes).toEqual([
      expect.stringMatching(/^MisassembledController\.envelopeAlone: PaymentWebhookEnvelopeGuard found no verified body/),
      expect.stringMatching(/^MisassembledController\.objectKey: the @WebhookIdempotencyKey function returned neither a string nor a whole number/),
      expect.stringMatching(/^MisassembledController\.ownResponse: the handler takes @Res\(\) \(or @Next\(\)\) without passthrough/),
      expect.stringMatching(/^MisassembledController\.shortRetention: the idempotency retentionMs \(1000\) must be at least twice/),
      expect.stringMatching(/^MisassembledController\.stacked: PaymentWebhookReceiver verifies and deduplicates by itself/),
      expect.stringMatching(/^MisassembledController\.stackedWithInner: PaymentWebhookReceiver verifies and deduplicates by itself/),
      expect.stringMatching(/^MisassembledController\.unguarded: PaymentWebhookIdempotencyInterceptor found no verified event/),
      expect.stringMatching(/^MisassembledController\.wrappedOwnResponse: the handler takes @Res\(\) \(or @Next\(\)\) without passthrough/),
    ]);
  });

  it("inside a host's retry, the second attempt claims the key again: a copy meanwhile gets 409, the handler runs once more, not twice", async () => {
    retriedRuns = 0;
    slowRuns = 0;
    const id = `retried-${adapter}`;
    const first = postWebhook(w.url, { id }, { path: 'retried/callback' });
    await waitFor('the retried attempt to run', () => slowRuns === 1);
    // the retried attempt holds the key: was let through without a claim, and this copy ran the handler beside it
    expect(await postWebhook(w.url, { id }, { path: 'retried/callback' })).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    releaseSlow();
    expect(await first).toMatchObject({ status: 200, json: { ok: true } });
    expect(retriedRuns).toBe(2);
  });

  it("a host's timeout and retry outside it: the retry, beside the first run still going, gets 409 and runs nothing", async () => {
    slowRuns = 0;
    const id = `timed-retry-${adapter}`;
    // was let through by the first run's mark: the handler ran a second time beside it
    expect(await postWebhook(w.url, { id }, { path: 'timed-retry/callback' })).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    expect(slowRuns).toBe(1);
    releaseSlow();
  });

  it('listed twice on a route (class and method), the outer interceptor deduplicates and the inner lets the request through: once, then duplicate', async () => {
    const event = envelope();
    const path = 'twice/callback';
    // was 409 on every delivery, the first included: the inner one found the outer one's claim held
    expect(await postWebhook(w.url, event, { path })).toMatchObject({ status: 200, json: { ok: true } });
    expect(await postWebhook(w.url, event, { path })).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(effects).toEqual([`twice:${String(event.eventId)}`]);
    // with an interceptor between the two that starts the rest from a timer of its own (no async context of the request)
    const queued = envelope();
    expect(await postWebhook(w.url, queued, { path: 'twice-queued/callback' })).toMatchObject({ status: 200, json: { ok: true } });
    expect(await postWebhook(w.url, queued, { path: 'twice-queued/callback' })).toMatchObject({ status: 200, json: { received: true, duplicate: true } });
    expect(effects).toEqual([`twice:${String(event.eventId)}`, `twice-queued:${String(queued.eventId)}`]);
  });

  it('a timeout inside the interceptor ends the request, not the handler: the claim is kept, so a copy meanwhile gets 409 and the handler runs once', async () => {
    slowRuns = 0;
    const id = `slow-${adapter}`;
    const path = 'slow/callback';
    expect(await postWebhook(w.url, { id }, { path })).toMatchObject({ status: 408 });
    // the handler is still running: was released at the 408, and the copy ran it a second time beside it
    expect(await postWebhook(w.url, { id }, { path })).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    expect(slowRuns).toBe(1);
    releaseSlow();
    expect(logger.messages('error')).toContainEqual(expect.stringContaining('SlowCallbackController.callback timed out for key'));
  });

  it('a timeout inside it mapped to 503 keeps the claim too: no status tells it from a failure, so any 5xx from behind another interceptor does', async () => {
    slowRuns = 0;
    const id = `slow-503-${adapter}`;
    const path = 'slow/callback-503';
    expect(await postWebhook(w.url, { id }, { path })).toMatchObject({ status: 503 });
    // before, the 503 released the claim and this copy ran the handler a second time beside the first
    expect(await postWebhook(w.url, { id }, { path })).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    expect(slowRuns).toBe(1);
    releaseSlow();
    expect(logger.messages('error')).toContainEqual(expect.stringContaining('SlowCallbackController.callback503 failed (ServiceUnavailableException'));
  });

  it("a handler's own 504 (its upstream call timed out) releases the key, the interceptor being innermost: the retry runs it", async () => {
    upstreamRuns.length = 0;
    upstreamTimeouts = 1;
    const id = `upstream-${adapter}`;
    expect(await postWebhook(w.url, { id }, { path: 'upstream/callback' })).toMatchObject({ status: 504 });
    expect(await postWebhook(w.url, { id }, { path: 'upstream/callback' })).toMatchObject({ status: 200, json: { ok: true } });
    expect(upstreamRuns).toEqual([id, id]);
  });

  it('runs the handler once per key and answers duplicates with the configured body', async () => {
    expect(await send('d-1')).toMatchObject({ status: 200, json: { ok: true } });
    expect(await send('d-1')).toMatchObject({ status: 200, json: { ok: true, duplicate: true } });
    expect(await send('d-2')).toMatchObject({ status: 200, json: { ok: true } });
    expect(effects).toEqual(['d-1', 'd-2']);
  });

  it("a partner's numeric delivery id is a key (its digits): once, then duplicate, also when sent as text", async () => {
    const numeric = (id: unknown) => postWebhook(w.url, { anything: 'the partner sends', id }, { path: 'partner/callback' });
    expect(await numeric(4242)).toMatchObject({ status: 200, json: { ok: true } });
    expect(await numeric(4242)).toMatchObject({ status: 200, json: { ok: true, duplicate: true } });
    expect(await numeric('4242')).toMatchObject({ status: 200, json: { ok: true, duplicate: true } });
    expect(effects).toEqual([4242]);
  });

  it('a replay with a new unsigned header value is still a duplicate (the key is signed data)', async () => {
    expect(await send('d-5', { header: 'first' })).toMatchObject({ status: 200, json: { ok: true } });
    expect(await send('d-5', { header: 'second' })).toMatchObject({ status: 200, json: { ok: true, duplicate: true } });
    expect(effects).toEqual(['d-5']);
  });

  it("keeps custom keys apart from the service's event ids: a custom key equal to an eventId does not suppress that event", async () => {
    const event = envelope('payment.succeeded');
    const eventId = event.eventId as string;
    expect(await send(eventId)).toMatchObject({ status: 200, json: { ok: true } });
    expect((await send(eventId)).json).toEqual({ ok: true, duplicate: true });
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200, json: { received: true } });
    expect(w.handlers.count('payment.*', eventId)).toBe(1);
    // and the other way round
    const second = envelope('payment.succeeded');
    expect(await postWebhook(w.url, second)).toMatchObject({ status: 200, json: { received: true } });
    // not `{ ok: true, duplicate: true }`: the processed event id did not answer for the custom key
    expect((await send(second.eventId as string)).json).toEqual({ ok: true });
  });

  it('releases the key when the handler fails, so the retry runs it: 500 WEBHOOK_HANDLER_FAILED, as the table says', async () => {
    failNext = 1;
    failure = () => new Error('partner handler failed');
    expect(await send('d-3')).toMatchObject({
      status: 500,
      json: { statusCode: 500, code: 'WEBHOOK_HANDLER_FAILED', message: expect.any(String) },
    });
    expect(await send('d-3')).toMatchObject({ status: 200, json: { ok: true } });
    expect(effects).toEqual(['d-3']);
  });

  it("an HttpException the handler throws keeps its own status and body; the key is released all the same", async () => {
    failNext = 1;
    failure = () => new BadRequestException('partner sent an unknown product');
    expect(await send('d-6')).toMatchObject({ status: 400, json: { statusCode: 400, message: 'partner sent an unknown product' } });
    expect(await send('d-6')).toMatchObject({ status: 200, json: { ok: true } });
    expect(effects).toEqual(['d-6']);
  });

  it('answers 400 WEBHOOK_IDEMPOTENCY_KEY_MISSING without a key, and the guard still checks signatures', async () => {
    expect(await send(undefined)).toMatchObject({ status: 400, json: { code: 'WEBHOOK_IDEMPOTENCY_KEY_MISSING' } });
    expect(await send('d-4', { signature: 'garbage' })).toMatchObject({ status: 400, json: { code: 'WEBHOOK_SIGNATURE_MALFORMED' } });
    expect(effects).toEqual([]);
  });

  it('a key two different signed bodies would share is refused 400, never answered as a duplicate', async () => {
    const partner = (raw: Buffer | string) => postWebhook(w.url, raw, { path: 'partner/callback' });
    // lone surrogates ("\ud800", "\udbff") are one byte string in a Redis key; an over-long key is refused too
    for (const raw of ['{"id":"k-\\ud800"}', '{"id":"k-\\udbff"}', JSON.stringify({ id: 'k'.repeat(513) })]) {
      expect(await partner(raw)).toMatchObject({ status: 400, json: { code: 'WEBHOOK_IDEMPOTENCY_KEY_MISSING', message: expect.stringMatching(/not usable/) } });
    }
    expect(effects).toEqual([]);
    expect(await partner(JSON.stringify({ id: 'k'.repeat(512) }))).toMatchObject({ status: 200, json: { ok: true } });
  });

  it('a subclass of the guard can replace one step (the secrets)', async () => {
    const body = { id: 'v-1' };
    expect(await postWebhook(w.url, body, { path: 'vault/hook', secret: 'whsec_from_vault' })).toMatchObject({ status: 200 });
    expect(await postWebhook(w.url, body, { path: 'vault/hook' })).toMatchObject({ status: 401, json: { code: 'WEBHOOK_SIGNATURE_MISMATCH' } });
    expect(effects).toEqual(['vault']);
  });
});

// The idempotency interceptor and a timeout both global (APP_INTERCEPTOR, in that order): the timeout runs
// inside it, so its 408 may leave the handler running, as when both are listed on the route.
@Controller('global')
class GloballyInterceptedController {
  @Post('slow')
  @HttpCode(200)
  @UseGuards(PaymentWebhookSignatureGuard)
  @WebhookIdempotencyKey((req: { body?: { id?: string } }) => req.body?.id)
  slow(): Promise<{ ok: true }> {
    return slowHandler();
  }
}

describe.each(ADAPTERS)('the idempotency interceptor and a timeout as global interceptors (%s)', (adapter) => {
  let w: WebhookApp;
  beforeAll(async () => {
    w = await startWebhookApp({
      adapter,
      logger: new CollectingLogger(),
      controllers: [GloballyInterceptedController],
      extraProviders: [
        { provide: APP_INTERCEPTOR, useClass: PaymentWebhookIdempotencyInterceptor },
        { provide: APP_INTERCEPTOR, useClass: TimeoutInterceptor },
        // a request-scoped global made by a factory: Nest lists it by that arrow function, no class (was a TypeError on every delivery)
        { provide: APP_INTERCEPTOR, scope: Scope.REQUEST, useFactory: () => new PassThroughInterceptor() },
      ],
    });
  });
  afterAll(async () => {
    releaseSlow();
    await w?.close();
  });

  it('a 408 of the global timeout keeps the claim: a copy meanwhile gets 409 and the handler runs once', async () => {
    slowRuns = 0;
    const id = `global-slow-${adapter}`;
    expect(await postWebhook(w.url, { id }, { path: 'global/slow' })).toMatchObject({ status: 408 });
    // was released at the 408: the copy ran the handler a second time beside the first
    expect(await postWebhook(w.url, { id }, { path: 'global/slow' })).toMatchObject({ status: 409, json: { code: 'WEBHOOK_EVENT_IN_FLIGHT' } });
    expect(slowRuns).toBe(1);
  });
});
