import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  type NestInterceptor,
  Optional,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { lastValueFrom, Observable } from 'rxjs';
import { PAYMENT_OPTION_DEFAULTS } from '../config/payment-options.defaults.js';
import { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import {
  WebhookEventInFlightError,
  WebhookIdempotencyKeyMissingError,
  WebhookStoreUnavailableResponseError,
} from './payment-webhook.errors.js';
import { getVerifiedPaymentWebhookEvent, type PaymentWebhookRequest } from './payment-webhook.request.js';

/** Returns the deduplication key of a request; `undefined`/empty → 400. */
export type WebhookIdempotencyKeyFn = (
  request: any,
  context: ExecutionContext,
) => string | undefined | null | Promise<string | undefined | null>;

export interface WebhookIdempotencyOptions {
  /** Key of the request. @default the `eventId` of the verified payment webhook event */
  key?: WebhookIdempotencyKeyFn;
  /** How long one delivery may hold the key; must exceed the handlers' run time. @default 60000 */
  leaseMs?: number;
  /** How long a processed key is remembered. @default 7 days */
  retentionMs?: number;
  /** Body answered (with the route's status) for a request already processed. @default { received: true, duplicate: true } */
  duplicateResponse?: (request: any) => unknown;
  /** Attempts at recording completion before giving up (see `recordCompletion`). @default 3 */
  completeAttempts?: number;
  /**
   * While handlers run, the claim is renewed every third of `leaseMs` (stores with `extend`),
   * so a slow handler is not run again by a concurrent delivery. Renewal stops after this
   * long, so a hung handler cannot block its event for good. @default 900000 (15 minutes)
   */
  maxLeaseRenewalMs?: number;
}

/** Provider token of the defaults the injectable interceptor uses (the module fills it from resolved options). */
export const PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS = Symbol('PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS');

/** Metadata key of `@WebhookIdempotencyKey`. */
export const WEBHOOK_IDEMPOTENCY_METADATA = 'payment-gateway:webhook-idempotency';

/**
 * Per-route settings for `PaymentWebhookIdempotencyInterceptor` on a route of your own:
 * `@WebhookIdempotencyKey((req) => req.body.id) @UseInterceptors(PaymentWebhookIdempotencyInterceptor)`.
 */
export const WebhookIdempotencyKey = (
  key: WebhookIdempotencyKeyFn,
  options: Omit<WebhookIdempotencyOptions, 'key'> = {},
): MethodDecorator & ClassDecorator => SetMetadata(WEBHOOK_IDEMPOTENCY_METADATA, { ...options, key });

// Same defaults as the module options, for an interceptor built by hand without them.
const DEFAULT_LEASE_MS: number = PAYMENT_OPTION_DEFAULTS.webhookLeaseMs;
const DEFAULT_MAX_LEASE_RENEWAL_MS = 15 * 60 * 1000;
const DEFAULT_RETENTION_MS: number = PAYMENT_OPTION_DEFAULTS.webhookRetentionMs;

const defaultKey: WebhookIdempotencyKeyFn = (request: PaymentWebhookRequest) =>
  getVerifiedPaymentWebhookEvent(request)?.eventId;

const defaultDuplicateResponse = (): unknown => ({ received: true, duplicate: true });

/**
 * Claims the request's key in the `WebhookEventStore` before the handler runs, so each
 * key is handled once across retries, duplicates and instances:
 * - first delivery → handler → completion recorded → handler's answer;
 * - already processed → `duplicateResponse`, handler not called;
 * - held by another delivery → 409 `WEBHOOK_EVENT_IN_FLIGHT` (the sender retries);
 * - handler throws → claim released, error rethrown (the next delivery runs it again);
 * - store unreachable → 503 `WEBHOOK_STORE_UNAVAILABLE`, handler not called.
 *
 * Injectable (`@UseInterceptors(PaymentWebhookIdempotencyInterceptor)` in a module that can
 * inject `WebhookEventStore`), or constructed by hand:
 * `new PaymentWebhookIdempotencyInterceptor(store, { key: (req) => req.headers['x-id'] })`.
 * The handler's observable is awaited to its last value; streaming responses are not supported.
 */
@Injectable()
export class PaymentWebhookIdempotencyInterceptor implements NestInterceptor {
  protected readonly logger = new Logger('PaymentWebhooks');

  constructor(
    @Inject(WebhookEventStore) protected readonly store: WebhookEventStore,
    @Optional() @Inject(PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS) protected readonly options: WebhookIdempotencyOptions = {},
    @Optional() protected readonly reflector?: Reflector,
  ) {}

  /** Settings per route handler, then per controller class (a method can be inherited by several). */
  private readonly settingsCache = new WeakMap<object, WeakMap<object, WebhookIdempotencyOptions>>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    // Nothing is claimed until Nest subscribes. One Observable around the promise:
    // cheaper per request than defer() + from(promise).
    return new Observable<unknown>((subscriber) => {
      this.run(context, next).then(
        (value) => {
          subscriber.next(value);
          subscriber.complete();
        },
        (error: unknown) => subscriber.error(error),
      );
    });
  }

  /**
   * Module defaults overridden by the route's `@WebhookIdempotencyKey`. Route metadata is
   * fixed once the app is initialised, so the merge is computed once per handler and class.
   */
  protected settingsFor(context: ExecutionContext): WebhookIdempotencyOptions {
    const handler = context.getHandler();
    const controller = context.getClass();
    let byClass = this.settingsCache.get(handler);
    let settings = byClass?.get(controller);
    if (settings === undefined) {
      const fromRoute = this.reflector?.getAllAndOverride<WebhookIdempotencyOptions | undefined>(
        WEBHOOK_IDEMPOTENCY_METADATA,
        [handler, controller],
      );
      settings = Object.freeze({ ...this.options, ...fromRoute });
      if (byClass === undefined) this.settingsCache.set(handler, (byClass = new WeakMap()));
      byClass.set(controller, settings);
    }
    return settings;
  }

  private async run(context: ExecutionContext, next: CallHandler): Promise<unknown> {
    const settings = this.settingsFor(context);
    const request = context.switchToHttp().getRequest();
    const key = await (settings.key ?? defaultKey)(request, context);
    if (typeof key !== 'string' || key.length === 0) {
      throw new PaymentWebhookHttpException(new WebhookIdempotencyKeyMissingError());
    }

    let claim;
    try {
      claim = await this.store.claim(key, settings.leaseMs ?? DEFAULT_LEASE_MS);
    } catch (error) {
      // Nothing ran yet: a non-2xx makes the sender retry, so nothing is lost.
      this.logger.error(`Webhook event store unavailable while claiming an event: ${describe(error)}`);
      throw new PaymentWebhookHttpException(new WebhookStoreUnavailableResponseError({ cause: error }));
    }
    if (claim.outcome === 'processed') {
      return (settings.duplicateResponse ?? defaultDuplicateResponse)(request);
    }
    if (claim.outcome === 'in-flight') {
      throw new PaymentWebhookHttpException(new WebhookEventInFlightError());
    }

    let result: unknown;
    const stopRenewal = this.renewWhileRunning(key, claim.claimToken, settings);
    try {
      result = await lastValueFrom(next.handle(), { defaultValue: undefined });
    } catch (error) {
      stopRenewal();
      await this.releaseQuietly(key, claim.claimToken);
      throw error;
    }
    stopRenewal();
    await this.recordCompletion(key, claim.claimToken, settings);
    return result;
  }

  /**
   * Marks the key processed after the handler succeeded. If the store keeps failing, the
   * request is STILL answered 2xx, on purpose: the handler's effects already happened,
   * and any non-2xx makes the sender deliver again, which would repeat them (a refund
   * sent twice) as soon as the lease expires or the store recovers. A 2xx ends the
   * retries, so the effects stay single; the remaining risk (a spontaneous duplicate
   * arriving after the lease expires) is logged as an error for the operator.
   */
  protected async recordCompletion(key: string, claimToken: string, settings: WebhookIdempotencyOptions): Promise<void> {
    const attempts = Math.max(1, settings.completeAttempts ?? 3);
    const retentionMs = settings.retentionMs ?? DEFAULT_RETENTION_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.store.complete(key, claimToken, retentionMs);
        return;
      } catch (error) {
        if (attempt >= attempts) {
          this.logger.error(
            `Handlers of webhook event "${key}" succeeded but completion could not be recorded ` +
              `(${describe(error)}); answering 2xx so the handlers are not run again by a retry. ` +
              'A duplicate delivery arriving after the lease expires would run them again.',
          );
          return;
        }
        await delay(25 * attempt);
      }
    }
  }

  /**
   * Keeps the claim alive while the handlers run (a lease shorter than a slow handler would
   * let a concurrent duplicate run them again). Returns the function that stops it. A store
   * without `extend`, a lost claim or a store error just stop renewing: the lease then
   * expires as it would have.
   */
  protected renewWhileRunning(key: string, claimToken: string, settings: WebhookIdempotencyOptions): () => void {
    const extend = this.store.extend?.bind(this.store);
    if (!extend) return () => undefined;
    const leaseMs = settings.leaseMs ?? DEFAULT_LEASE_MS;
    const stopAt = Date.now() + (settings.maxLeaseRenewalMs ?? DEFAULT_MAX_LEASE_RENEWAL_MS);
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    const tick = (): void => {
      if (stopped) return;
      if (Date.now() >= stopAt) {
        this.logger.error(`Handlers of webhook event "${key}" are still running; no longer renewing its claim`);
        return;
      }
      extend(key, claimToken, leaseMs).then(
        (renewed) => {
          if (!renewed) this.logger.warn(`The claim of webhook event "${key}" was lost while its handlers ran`);
          else schedule();
        },
        (error: unknown) => this.logger.warn(`Could not renew the claim of webhook event "${key}" (${describe(error)})`),
      );
    };
    const schedule = (): void => {
      if (stopped) return;
      timer = setTimeout(tick, Math.max(1, Math.floor(leaseMs / 3)));
      timer.unref();
    };
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** After a failed handler: free the key so the redelivery runs the handlers. If this fails, the lease expires on its own. */
  protected async releaseQuietly(key: string, claimToken: string): Promise<void> {
    try {
      await this.store.release(key, claimToken);
    } catch (error) {
      this.logger.warn(
        `Could not release the claim of webhook event "${key}" (${describe(error)}); it becomes claimable when its lease expires`,
      );
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
