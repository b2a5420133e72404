// PaymentWebhookIdempotencyInterceptor as a unit: Nest's own ExecutionContextHost and
// Reflector, the real memory store, and a route handler that is a plain observable.
import 'reflect-metadata';
import { type CallHandler, HttpException, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { defer, lastValueFrom, of, type Observable } from 'rxjs';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import { PaymentWebhookHttpException } from '../../lib/webhooks/payment-webhook-http.exception.js';
import { PaymentWebhookIdempotencyInterceptor } from '../../lib/webhooks/payment-webhook-idempotency.interceptor.js';
import type { WebhookRouteMisconfiguredError } from '../../lib/webhooks/payment-webhook.errors.js';
import { getPaymentWebhookState } from '../../lib/webhooks/payment-webhook.request.js';
import { WebhookIdempotencyKey } from '../../lib/webhooks/webhook-idempotency-key.decorator.js';
import { unusedLoopbackPort } from '../support/loopback-port.js';

class Routes {
  // the default key: the eventId the envelope guard verified
  verified(): void {}

  @WebhookIdempotencyKey((req: { body: { deliveryId?: string } }) => req.body.deliveryId, {
    duplicateResponse: () => ({ ok: true, duplicate: true }),
  })
  custom(): void {}
}

function context(handler: keyof Routes, request: object): ExecutionContextHost {
  const host = new ExecutionContextHost([request, {}], Routes, Routes.prototype[handler]);
  host.setType('http');
  return host;
}

function verifiedRequest(eventId: string, account?: string): object {
  const request = { headers: {} };
  getPaymentWebhookState(request).event = { eventId, eventType: 'payment.succeeded', ...(account ? { account } : {}) } as never;
  return request;
}

/** A route handler: counts its runs, may fail or wait. */
function handler(result: () => Promise<unknown>): CallHandler & { runs: number } {
  const h = {
    runs: 0,
    handle: (): Observable<unknown> =>
      defer(async () => {
        h.runs++;
        return result();
      }),
  };
  return h;
}

async function run(interceptor: PaymentWebhookIdempotencyInterceptor, ctx: ExecutionContextHost, next: CallHandler): Promise<unknown> {
  return lastValueFrom(interceptor.intercept(ctx, next));
}

async function status(promise: Promise<unknown>): Promise<{ status: number; code: string }> {
  const error = await promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PaymentWebhookHttpException);
  return { status: (error as PaymentWebhookHttpException).getStatus(), code: (error as PaymentWebhookHttpException).code };
}

describe('PaymentWebhookIdempotencyInterceptor', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));

  let store: MemoryWebhookEventStore;
  let interceptor: PaymentWebhookIdempotencyInterceptor;
  beforeEach(() => {
    store = new MemoryWebhookEventStore();
    interceptor = new PaymentWebhookIdempotencyInterceptor(store, { leaseMs: 60_000 }, new Reflector());
  });
  afterEach(() => interceptor.onApplicationShutdown());

  it.each([
    ['graphql', [undefined, {}, {}, {}]],
    ['rpc', ['a message', {}]],
  ])("on a %s handler answers 500 WEBHOOK_ROUTE_MISCONFIGURED naming the fix, runs nothing (was a bare TypeError)", async (type, args) => {
    const host = new ExecutionContextHost(args as unknown[], Routes, Routes.prototype.verified);
    host.setType(type);
    const next = handler(async () => 'ran');
    const error = await run(interceptor, host, next).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentWebhookHttpException);
    expect((error as PaymentWebhookHttpException).code).toBe('WEBHOOK_ROUTE_MISCONFIGURED');
    expect(String((error as PaymentWebhookHttpException).message)).toMatch(/^The webhook route is misconfigured/);
    expect(next.runs).toBe(0);
  });

  it("runs the handler once per verified eventId and answers the duplicate without it", async () => {
    const next = handler(async () => ({ received: true }));
    await expect(run(interceptor, context('verified', verifiedRequest('evt_1')), next)).resolves.toEqual({ received: true });
    await expect(run(interceptor, context('verified', verifiedRequest('evt_1')), next)).resolves.toEqual({ received: true, duplicate: true });
    expect(next.runs).toBe(1);
  });

  it("keeps each account's event ids apart (an envelope guard's getAccount): the same id of another account runs too", async () => {
    const next = handler(async () => ({ received: true }));
    await run(interceptor, context('verified', verifiedRequest('evt_shared', 'default')), next);
    await expect(run(interceptor, context('verified', verifiedRequest('evt_shared', 'eu')), next)).resolves.toEqual({ received: true });
    await expect(run(interceptor, context('verified', verifiedRequest('evt_shared', 'eu')), next)).resolves.toEqual({ received: true, duplicate: true });
    expect(next.runs).toBe(2);
    expect(await store.isProcessed('eu:event:evt_shared')).toBe(true);
    expect(await store.isProcessed('default:event:evt_shared')).toBe(true);
  });

  it("a route setting given undefined leaves the module's setting in force (it fell back to the package default)", async () => {
    let now = 1_000_000;
    const clockedStore = new MemoryWebhookEventStore({ now: () => now });
    const day = 86_400_000;
    const byModule = new PaymentWebhookIdempotencyInterceptor(clockedStore, { retentionMs: 2 * day }, new Reflector());
    class EnvRoutes {
      // `retentionMs: Number(process.env.X) || undefined` with X unset
      @WebhookIdempotencyKey((req: { body: { deliveryId?: string } }) => req.body.deliveryId, { retentionMs: undefined, leaseMs: undefined })
      custom(): void {}
    }
    const ctx = new ExecutionContextHost([{ headers: {}, body: { deliveryId: 'd_env' } }, {}], EnvRoutes, EnvRoutes.prototype.custom);
    ctx.setType('http');
    try {
      await run(byModule, ctx, handler(async () => ({ ok: true })));
      now += 3 * day;
      // remembered 2 days as the module says: was the package's 7 days
      expect(await clockedStore.isProcessed('default:custom:d_env')).toBe(false);
    } finally {
      byModule.onApplicationShutdown();
    }
  });

  it('answers 409 while another delivery holds the event, and runs it once', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const next = handler(async () => {
      await gate;
      return { received: true };
    });
    const first = run(interceptor, context('verified', verifiedRequest('evt_2')), next);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await status(run(interceptor, context('verified', verifiedRequest('evt_2')), next))).toEqual({
      status: 409,
      code: 'WEBHOOK_EVENT_IN_FLIGHT',
    });
    open();
    await expect(first).resolves.toEqual({ received: true });
    expect(next.runs).toBe(1);
  });

  it('releases the claim when the handler fails, as 500 WEBHOOK_HANDLER_FAILED caused by its error, so a redelivery runs it', async () => {
    let fail = true;
    const failure = new Error('handler failed');
    const next = handler(async () => {
      if (fail) {
        fail = false;
        throw failure;
      }
      return { received: true };
    });
    const error = await run(interceptor, context('verified', verifiedRequest('evt_3')), next).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentWebhookHttpException);
    const exception = error as PaymentWebhookHttpException;
    expect([exception.code, exception.getStatus(), exception.error.cause]).toEqual(['WEBHOOK_HANDLER_FAILED', 500, failure]);
    await expect(run(interceptor, context('verified', verifiedRequest('evt_3')), next)).resolves.toEqual({ received: true });
    expect(next.runs).toBe(2);
  });

  it('onModuleDestroy waits for a handler still running (its sender may have hung up), up to shutdownTimeoutMs', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const next = handler(async () => {
      await gate;
      return { received: true };
    });
    const first = run(interceptor, context('verified', verifiedRequest('evt_shutdown')), next);
    await new Promise((resolve) => setImmediate(resolve));
    let destroyed = false;
    const destroying = interceptor.onModuleDestroy().then(() => (destroyed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(destroyed).toBe(false);
    open();
    await destroying;
    await expect(first).resolves.toEqual({ received: true });
    // completion was recorded: a copy is a duplicate
    await expect(run(interceptor, context('verified', verifiedRequest('evt_shutdown')), next)).resolves.toEqual({ received: true, duplicate: true });
    expect(next.runs).toBe(1);

    const impatient = new PaymentWebhookIdempotencyInterceptor(store, { shutdownTimeoutMs: 20 }, new Reflector());
    void run(impatient, context('verified', verifiedRequest('evt_hung')), handler(() => new Promise(() => undefined)));
    await new Promise((resolve) => setImmediate(resolve));
    const started = Date.now();
    await impatient.onModuleDestroy();
    expect(Date.now() - started).toBeLessThan(1000);
    impatient.onApplicationShutdown();
  });

  it("built by hand without a Reflector (the README's way), still reads the route's @WebhookIdempotencyKey", async () => {
    const byHand = new PaymentWebhookIdempotencyInterceptor(store);
    const next = handler(async () => ({ ok: true }));
    try {
      const request = () => ({ headers: {}, body: { deliveryId: 'dlv_by_hand' } });
      await expect(run(byHand, context('custom', request()), next)).resolves.toEqual({ ok: true });
      await expect(run(byHand, context('custom', request()), next)).resolves.toEqual({ ok: true, duplicate: true });
      expect(next.runs).toBe(1);
    } finally {
      byHand.onApplicationShutdown();
    }
  });

  it('answers 503 and runs nothing when the store cannot be reached', async () => {
    // the real Redis store, pointed at a port nothing listens on
    const store = new RedisWebhookEventStore(`redis://127.0.0.1:${await unusedLoopbackPort()}`, { operationTimeoutMs: 500 });
    const unreachable = new PaymentWebhookIdempotencyInterceptor(store, {}, new Reflector());
    const next = handler(async () => ({ received: true }));
    try {
      expect(await status(run(unreachable, context('verified', verifiedRequest('evt_4')), next))).toEqual({
        status: 503,
        code: 'WEBHOOK_STORE_UNAVAILABLE',
      });
      expect(next.runs).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('answers 400 when the route\'s key function finds no key; without guards or a key function the route is misconfigured (500, not the sender\'s fault)', async () => {
    const next = handler(async () => ({ received: true }));
    expect(await status(run(interceptor, context('custom', { headers: {}, body: {} }), next))).toEqual({
      status: 400,
      code: 'WEBHOOK_IDEMPOTENCY_KEY_MISSING',
    });
    // a blank key is none: was accepted, and every delivery with a blank key after the first was a "duplicate"
    for (const blank of [' ', '\t\n ']) {
      expect(await status(run(interceptor, context('custom', { headers: {}, body: { deliveryId: blank } }), next))).toEqual({
        status: 400,
        code: 'WEBHOOK_IDEMPOTENCY_KEY_MISSING',
      });
    }
    expect(next.runs).toBe(0);
    // no verified event (the guards are missing) and no key function: was a silent 400 blaming the sender
    expect(await status(run(interceptor, context('verified', { headers: {} }), next))).toEqual({
      status: 500,
      code: 'WEBHOOK_ROUTE_MISCONFIGURED',
    });
  });

  it("a key function that throws is the route's fault: 500 WEBHOOK_ROUTE_MISCONFIGURED caused by its error (an HttpException a host filter sees), nothing runs", async () => {
    const next = handler(async () => ({ ok: true }));
    // `req.body.deliveryId` on a JSON body of null (Fastify hands it over): was a bare TypeError, a 500 with no code
    const error = await run(interceptor, context('custom', { headers: {}, body: null }), next).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentWebhookHttpException);
    const exception = error as PaymentWebhookHttpException;
    expect([exception.getStatus(), exception.code, exception.error.cause]).toEqual([500, 'WEBHOOK_ROUTE_MISCONFIGURED', expect.any(TypeError)]);
    expect((exception.error as WebhookRouteMisconfiguredError).fix).toContain('@WebhookIdempotencyKey function threw');
    expect(next.runs).toBe(0);
  });

  it('a handler that throws a 2xx HttpException answered the delivery: its completion is recorded, so a copy is a duplicate and runs nothing', async () => {
    const next = handler(async () => {
      throw new HttpException({ accepted: true }, 202);
    });
    const request = () => context('custom', { headers: {}, body: { deliveryId: 'd_202' } });
    const thrown = await run(interceptor, request(), next).catch((e: unknown) => e);
    // the handler's own answer goes out as it is
    expect(thrown).toBeInstanceOf(HttpException);
    expect((thrown as HttpException).getStatus()).toBe(202);
    // was released: every copy answered 202 and ran the handler again
    await expect(run(interceptor, request(), next)).resolves.toEqual({ ok: true, duplicate: true });
    expect(next.runs).toBe(1);
  });

  it('a handler that throws a non-2xx HttpException keeps its answer and releases the claim: the retry runs it', async () => {
    let fail = true;
    const next = handler(async () => {
      if (fail) {
        fail = false;
        throw new HttpException('moved', 307);
      }
      return { ok: true };
    });
    const request = () => context('custom', { headers: {}, body: { deliveryId: 'd_307' } });
    const thrown = await run(interceptor, request(), next).catch((e: unknown) => e);
    expect((thrown as HttpException).getStatus()).toBe(307);
    await expect(run(interceptor, request(), next)).resolves.toEqual({ ok: true });
    expect(next.runs).toBe(2);
  });

  it("uses the route's @WebhookIdempotencyKey, in a namespace apart from the service's event ids", async () => {
    const next = handler(async () => ({ ok: true }));
    const custom = (id: string) => context('custom', { headers: {}, body: { deliveryId: id } });
    await expect(run(interceptor, custom('evt_5'), next)).resolves.toEqual({ ok: true });
    await expect(run(interceptor, custom('evt_5'), next)).resolves.toEqual({ ok: true, duplicate: true });
    // the same string as a verified eventId is another key
    await expect(run(interceptor, context('verified', verifiedRequest('evt_5')), handler(async () => of(1)))).resolves.toBeDefined();
    await expect(store.claim('default:custom:evt_5', 1000)).resolves.toEqual({ outcome: 'processed' });
    await expect(store.claim('default:event:evt_5', 1000)).resolves.toEqual({ outcome: 'processed' });
  });

  // A bad lease or retention reached the store only per delivery, where its RangeError looked
  // like an outage: every delivery 503, or a 2xx whose completion was never recorded.
  describe('route and constructor settings are checked where they are written', () => {
    const fractionalRetention = (1.5 * 86_400_000) / 7;
    const configurationError = (...names: string[]) =>
      expect.objectContaining({
        name: 'PaymentConfigurationError',
        code: 'PAYMENT_INVALID_CONFIGURATION',
        problems: names.map((name) => expect.stringContaining(name)),
      });

    it('@WebhookIdempotencyKey with a fractional retentionMs or a bad leaseMs throws when the class is defined, naming each option', () => {
      const key = (req: { body: { id: string } }) => req.body.id;
      const define = (options: object) => () => {
        class PartnerRoutes {
          @WebhookIdempotencyKey(key, options)
          callback(): void {}
        }
        return PartnerRoutes;
      };
      expect(define({ retentionMs: fractionalRetention })).toThrow(PaymentConfigurationError);
      expect(define({ retentionMs: fractionalRetention })).toThrow(
        expect.objectContaining({ message: expect.stringContaining(`@WebhookIdempotencyKey(): retentionMs must be a whole number of ms (1000 to 31622400000), got ${fractionalRetention}`) }),
      );
      for (const leaseMs of [0, -1, 0.5, Number.NaN, '60000']) expect(define({ leaseMs })).toThrow(configurationError('leaseMs'));
      expect(define({ leaseMs: 0, retentionMs: 1.5, completeAttempts: 0 })).toThrow(configurationError('leaseMs', 'retentionMs', 'completeAttempts'));
      expect(define({ leaseMs: 30_000, retentionMs: 86_400_000 })).not.toThrow();
    });

    it('the constructor refuses them too (an interceptor built by hand)', () => {
      const store = new MemoryWebhookEventStore();
      const build = (options: object) => () => new PaymentWebhookIdempotencyInterceptor(store, options, new Reflector());
      expect(build({ retentionMs: fractionalRetention })).toThrow(configurationError('PaymentWebhookIdempotencyInterceptor options: retentionMs'));
      expect(build({ leaseMs: 1.5 })).toThrow(configurationError('leaseMs'));
      expect(build({ shutdownTimeoutMs: -1, maxLeaseRenewalMs: Number.POSITIVE_INFINITY })).toThrow(configurationError('maxLeaseRenewalMs', 'shutdownTimeoutMs'));
      expect(build({ key: 'deliveryId' })).toThrow(configurationError('key must be a function'));
      expect(build({ leaseMs: 60_000, retentionMs: 86_400_000, shutdownTimeoutMs: 0 })).not.toThrow();
    });
  });
});
