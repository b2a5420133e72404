import {
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Inject,
  Injectable,
  type Logger,
  type NestInterceptor,
  type OnApplicationShutdown,
  type OnModuleDestroy,
  Optional,
} from '@nestjs/common';
import { ApplicationConfig, Reflector } from '@nestjs/core';
import { lastValueFrom, Observable, type Subscription } from 'rxjs';
import { describeError } from '../common/error-message.util.js';
import { isWellFormedUnicode } from '../common/well-formed-unicode.util.js';
import { PAYMENT_OPTION_DEFAULTS } from '../config/payment-options.defaults.js';
import { signatureReplayWindowMs } from '../config/payment-options.validation.js';
import { DEFAULT_PAYMENT_ACCOUNT, PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS, WEBHOOK_IDEMPOTENCY_METADATA } from '../payment.constants.js';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { handlerMethodName, routeMisconfigured, routeNameOf } from './webhook-route-fixes.js';
import { MAX_EVENT_ID_LENGTH } from './payment-webhook-envelope.js';
import { PaymentWebhookErrorCode, WebhookHandlerFailedError, WebhookIdempotencyKeyMissingError } from './payment-webhook.errors.js';
import { getPaymentWebhookState, getVerifiedPaymentWebhookEvent, type PaymentWebhookRequest } from './payment-webhook.request.js';
import { ALREADY_PROCESSED, WebhookDeduplicator } from './webhook-deduplicator.js';
import {
  accountDeduplicationSettings,
  DEFAULT_COMPLETE_ATTEMPTS,
  DEFAULT_MAX_LEASE_RENEWAL_MS,
  type WebhookDeduplicationSettings,
  WorkOutcomeUnknown,
} from './webhook-deduplication.settings.js';
import type { ModuleWebhookIdempotencyDefaults, WebhookIdempotencyKeyFn, WebhookIdempotencyOptions } from './webhook-idempotency.interface.js';
import { assertWebhookIdempotencyOptions } from './webhook-idempotency.validation.js';
import { webhookCustomKey, webhookEventKey } from './webhook-store-keys.js';
import {
  INVALID_KEY,
  isInstanceOf,
  isTimeoutError,
  KEY_THREW_FIX,
  KEY_TYPE_FIX,
  keyText,
  mayLeaveHandlerRunning,
  notHttpFix,
  RESPONSE_HANDLED_FIX,
  routeAnswersByItself,
  runsInterceptorsInside,
  TIMEOUT_INSIDE_FIX,
} from './webhook-idempotency-route.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

interface RouteSettings {
  key: WebhookIdempotencyKeyFn | undefined;
  duplicateResponse: (request: any) => unknown;
  dedupe: WebhookDeduplicationSettings;
  /** What the route's `@WebhookIdempotencyKey` sets itself (over a named account's own defaults). */
  own: WebhookIdempotencyOptions | undefined;
  /** `Controller.method`, for the logs of a route that cannot work. */
  route: string;
  /** The handler answers through `@Res()` or `@Next()` itself: Nest would send no duplicate answer the interceptor returns. */
  answersByItself: boolean;
  /** Another interceptor runs inside this one (between it and the handler): a timeout there may leave the handler running. */
  wrapsInterceptors: boolean;
}

/** Where and how a named account's events are claimed on a route (see `claimsFor`). */
interface AccountClaims {
  deduplicator: WebhookDeduplicator;
  dedupe: WebhookDeduplicationSettings;
}

const defaultDuplicateResponse = (): unknown => ({ received: true, duplicate: true });

/** The fix of a route with the interceptor but neither the guards (a verified event) nor a key of its own. */
const NO_KEY_FIX =
  'PaymentWebhookIdempotencyInterceptor found no verified event to take the eventId from: list ' +
  '@UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard) on the route (guards run before interceptors), ' +
  'or give it a key of its own with @WebhookIdempotencyKey(...)';

/**
 * Building block for a route of your own: claims the request's key in the default
 * account's `WebhookEventStore` before the handler runs, so each key is handled once across
 * retries, duplicates and instances (first delivery → handler; processed → the duplicate
 * answer; held by another delivery → 409; handler throws → claim released and error
 * rethrown; store down → 503). By default the key is the `eventId` verified by
 * `PaymentWebhookSignatureGuard` + `PaymentWebhookEnvelopeGuard`; `@WebhookIdempotencyKey`
 * sets another per route.
 *
 * Injectable (`@UseInterceptors(PaymentWebhookIdempotencyInterceptor)` where the module is
 * imported), or constructed by hand: `new PaymentWebhookIdempotencyInterceptor(store, { key })`.
 * The handler's observable is awaited to its last value; streaming responses are not supported.
 * @publicApi
 */
@Injectable()
export class PaymentWebhookIdempotencyInterceptor implements NestInterceptor, OnModuleDestroy, OnApplicationShutdown {
  protected readonly logger: Logger = new PaymentLogger('PaymentWebhooks');
  private readonly deduplicator: WebhookDeduplicator;
  /** Over the stores of named accounts, by store (see `claimsFor`). */
  private readonly accountDeduplicators = new Map<WebhookEventStore, WebhookDeduplicator>();
  /** Per route's settings and named account: its store's deduplicator and its lease and retention. */
  private readonly accountClaims = new WeakMap<RouteSettings, Map<string, AccountClaims>>();
  /** ES-private: a subclass may have an `accounts` of its own. */
  readonly #accounts: PaymentAccountRegistry | undefined;
  readonly #appConfig: ApplicationConfig | undefined;
  /** Settings per route handler, then per controller class (a method can be inherited by several). */
  private readonly settingsCache = new WeakMap<object, WeakMap<object, RouteSettings>>();

  constructor(
    @Inject(WebhookEventStore) store: WebhookEventStore,
    @Optional() @Inject(PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS) protected readonly options: WebhookIdempotencyOptions = {},
    // built by hand without one, `@WebhookIdempotencyKey` on the route must still count
    @Optional() protected readonly reflector: Reflector = new Reflector(),
    // where the module is imported: a named account's event (an envelope guard's `getAccount`) is claimed in that account's store
    @Optional() accounts?: PaymentAccountRegistry,
    // the app's global interceptors: one registered after this one runs inside it (a global timeout)
    @Optional() appConfig?: ApplicationConfig,
  ) {
    assertWebhookIdempotencyOptions(options, 'PaymentWebhookIdempotencyInterceptor options');
    this.deduplicator = new WebhookDeduplicator(store, this.logger);
    this.#accounts = accounts;
    this.#appConfig = appConfig;
  }

  /** The app's global interceptors, in the order Nest runs them (request-scoped ones by class). */
  #globalInterceptors(): unknown[] {
    const config = this.#appConfig;
    if (config === undefined) return [];
    return [...config.getGlobalInterceptors(), ...config.getGlobalRequestInterceptors().map((wrapper) => wrapper.metatype)];
  }

  /**
   * A named account's event is claimed in that account's store, with that account's lease and
   * retention (under what the route sets itself): as its receiver and worker claim it, so one event
   * delivered to a host route and to the account's route runs once. The default account, a custom
   * key without an event, or an interceptor built by hand: the given store and the module defaults.
   */
  private claimsFor(account: string, settings: RouteSettings): AccountClaims {
    const registered = account === DEFAULT_PAYMENT_ACCOUNT ? undefined : this.#accounts?.registered(account);
    const store = registered?.store;
    if (registered === undefined || store === undefined) return { deduplicator: this.deduplicator, dedupe: settings.dedupe };
    let byAccount = this.accountClaims.get(settings);
    if (byAccount === undefined) this.accountClaims.set(settings, (byAccount = new Map()));
    let claims = byAccount.get(account);
    if (claims === undefined) {
      let deduplicator = this.accountDeduplicators.get(store);
      if (deduplicator === undefined) this.accountDeduplicators.set(store, (deduplicator = new WebhookDeduplicator(store, this.logger)));
      const defaults = accountDeduplicationSettings(registered.options);
      const own = settings.own;
      const dedupe = { ...defaults, ...definedOf({ leaseMs: own?.leaseMs, retentionMs: own?.retentionMs, completeAttempts: own?.completeAttempts, maxLeaseRenewalMs: own?.maxLeaseRenewalMs }) };
      // the account's own replay window: its signature guard takes a copy that long
      const problem = this.retentionProblem(dedupe.leaseMs, dedupe.retentionMs, signatureReplayWindowMs(registered.options.webhookToleranceSeconds), account);
      if (problem !== undefined) throw routeMisconfigured(this.logger, problem, settings.route);
      byAccount.set(account, (claims = { deduplicator, dedupe }));
    }
    return claims;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    // Nothing is claimed until Nest subscribes.
    return new Observable<unknown>((subscriber) => {
      this.run(context, next, subscriber).then(
        (value) => {
          subscriber.next(value);
          subscriber.complete();
        },
        (error: unknown) => subscriber.error(error),
      );
    });
  }

  /** Lets handlers still running finish (see `shutdownTimeoutMs`) before the HTTP server closes and the store with it. */
  async onModuleDestroy(): Promise<void> {
    await Promise.all(this.allDeduplicators().map((d) => d.finishRunning(this.shutdownTimeoutMs(), 'PaymentWebhookIdempotencyInterceptor')));
  }

  /**
   * Once the HTTP server has drained (Nest closes it after module destroy): waits for
   * deliveries that started since and whose sender hung up, then stops claim renewal.
   */
  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.allDeduplicators().map((d) => d.shutdown(this.shutdownTimeoutMs(), 'PaymentWebhookIdempotencyInterceptor')));
  }

  private allDeduplicators(): WebhookDeduplicator[] {
    return [this.deduplicator, ...this.accountDeduplicators.values()];
  }

  private shutdownTimeoutMs(): number {
    return this.options.shutdownTimeoutMs ?? PAYMENT_OPTION_DEFAULTS.webhookShutdownTimeoutMs;
  }

  /**
   * Module defaults overridden by the route's `@WebhookIdempotencyKey`. Route metadata is
   * fixed once the app is initialised, so the merge is computed once per handler and class.
   */
  private settingsFor(context: ExecutionContext): RouteSettings {
    const handler = context.getHandler();
    const controller = context.getClass();
    let byClass = this.settingsCache.get(handler);
    let settings = byClass?.get(controller);
    if (settings === undefined) {
      const fromRoute = this.reflector.getAllAndOverride<WebhookIdempotencyOptions | undefined>(
        WEBHOOK_IDEMPOTENCY_METADATA,
        [handler, controller],
      );
      // a route's `undefined` (a variable left unset) leaves the module's setting in force
      const merged: WebhookIdempotencyOptions = { ...this.options, ...definedOf(fromRoute ?? {}) };
      const dedupe = {
        leaseMs: merged.leaseMs ?? PAYMENT_OPTION_DEFAULTS.webhookLeaseMs,
        retentionMs: merged.retentionMs ?? PAYMENT_OPTION_DEFAULTS.webhookRetentionMs,
        completeAttempts: merged.completeAttempts ?? DEFAULT_COMPLETE_ATTEMPTS,
        maxLeaseRenewalMs: merged.maxLeaseRenewalMs ?? DEFAULT_MAX_LEASE_RENEWAL_MS,
      };
      const route = routeNameOf(context);
      const problem = this.retentionProblem(dedupe.leaseMs, dedupe.retentionMs, (this.options as ModuleWebhookIdempotencyDefaults).minRetentionMs);
      // the same rules as the module's own webhookRetentionMs, for the settings this route ends up with
      if (problem !== undefined) throw routeMisconfigured(this.logger, problem, route);
      const answersByItself = routeAnswersByItself(controller, handlerMethodName(controller, handler));
      const wrapsInterceptors = runsInterceptorsInside(this, controller, handler, this.#globalInterceptors(), isIdempotencyInterceptor);
      settings = Object.freeze({ key: merged.key, duplicateResponse: merged.duplicateResponse ?? defaultDuplicateResponse, dedupe, own: fromRoute, route, answersByItself, wrapsInterceptors });
      if (byClass === undefined) this.settingsCache.set(handler, (byClass = new WeakMap()));
      byClass.set(controller, settings);
    }
    return settings;
  }

  /**
   * Why a route's retention cannot work with its lease or the signature's replay window
   * (`minRetentionMs`: the default account's, or `account`'s), if it cannot.
   */
  private retentionProblem(leaseMs: number, retentionMs: number, minRetentionMs: number | undefined, account?: string): string | undefined {
    if (retentionMs < leaseMs) return `the idempotency retentionMs (${retentionMs}) must be at least its leaseMs (${leaseMs})`;
    if (minRetentionMs !== undefined && retentionMs < minRetentionMs) {
      const of = account === undefined ? '' : ` of account ${account}`;
      return (
        `the idempotency retentionMs (${retentionMs}) must be at least twice webhookToleranceSeconds${of} (${minRetentionMs} ms): ` +
        'a copy of a signed delivery passes the signature guard that long, and would run the handler again once its key is forgotten'
      );
    }
    return undefined;
  }

  private async run(context: ExecutionContext, next: CallHandler, answer: Subscription): Promise<unknown> {
    // a resolver's or a message handler's context has no HTTP request to read a key from or answer
    if (context.getType() !== 'http') throw routeMisconfigured(this.logger, notHttpFix(context.getType()), routeNameOf(context));
    const request = context.switchToHttp().getRequest();
    const state = getPaymentWebhookState(request as PaymentWebhookRequest);
    // listed twice (on the class and the method, or globally and on the route): a run that claimed this request's
    // key is still being awaited, so this one runs inside it. Once that run's answer is given up (a host's
    // timeout and retry outside) or given, a run claims as any run does: 409 while the key is still held
    if (state.claimHolder !== undefined && !state.claimHolder.closed) return lastValueFrom(next.handle(), { defaultValue: undefined });
    const settings = this.settingsFor(context);
    // every copy of a handled event would wait for an answer that never comes, until the sender gives the event up
    if (settings.answersByItself) throw routeMisconfigured(this.logger, RESPONSE_HANDLED_FIX, settings.route);
    const event = getVerifiedPaymentWebhookEvent(request as PaymentWebhookRequest);
    // no key function and no verified event: the guards are missing, the sender did nothing wrong
    if (!settings.key && event === undefined) throw routeMisconfigured(this.logger, NO_KEY_FIX, settings.route);
    const id = keyText(settings.key ? await this.keyOf(settings.key, request, context, settings.route) : event?.eventId);
    if (id === INVALID_KEY) throw routeMisconfigured(this.logger, KEY_TYPE_FIX, settings.route);
    // a blank key is none (the sender's field was empty): it would make every later delivery a "duplicate"
    if (id === undefined || id.trim() === '') {
      throw new PaymentWebhookHttpException(new WebhookIdempotencyKeyMissingError());
    }
    // lone surrogates ("\ud800", "\udbff") become the same bytes in a Redis key
    if (id.length > MAX_EVENT_ID_LENGTH || !isWellFormedUnicode(id)) {
      throw new PaymentWebhookHttpException(new WebhookIdempotencyKeyMissingError(true));
    }
    // the event's account (an envelope guard's `getAccount`): ids are unique per account only
    const account = event?.account ?? DEFAULT_PAYMENT_ACCOUNT;
    const key = settings.key ? webhookCustomKey(account, id) : webhookEventKey(account, id);
    const { deduplicator, dedupe } = this.claimsFor(account, settings);
    const result = await deduplicator.run(key, dedupe, () => {
      // PaymentWebhookReceiver in the handler would claim the same key again, and find it held
      state.claimedByInterceptor = settings.route;
      state.claimHolder = answer;
      return this.handle(next, id, settings);
    });
    if (result === ALREADY_PROCESSED) return settings.duplicateResponse(request);
    if (result instanceof ThrownAnswer) throw result.exception; // its completion is recorded
    return result;
  }

  /**
   * The route's key function's answer. One that throws (`req.body.id` on a JSON body of
   * `null`) is the route's fault, like one that returns an object: it should return
   * `undefined` when the request has no key (400). Never the raw error: a host filter gets an
   * `HttpException` with a `code`, the error as its cause.
   */
  private async keyOf(key: WebhookIdempotencyKeyFn, request: unknown, context: ExecutionContext, route: string): Promise<unknown> {
    try {
      return await key(request, context);
    } catch (error) {
      throw routeMisconfigured(this.logger, KEY_THREW_FIX, route, error);
    }
  }

  /**
   * Runs the route handler. A failure that is not an `HttpException` becomes 500
   * `WEBHOOK_HANDLER_FAILED` (the README's table, with a `code`, and what a global filter
   * receives), logged here since Nest's default handler does not log an `HttpException`; an
   * `HttpException` the handler threw keeps its own status and body.
   */
  private async handle(next: CallHandler, id: string, { route, wrapsInterceptors }: RouteSettings): Promise<unknown> {
    try {
      return await lastValueFrom(next.handle(), { defaultValue: undefined });
    } catch (error) {
      // an interceptor inside this one may have given up on a handler still running: released, a copy would
      // run it beside it (innermost, a timeout is the handler's own, its upstream call's: released as any failure).
      // Which failure it was cannot be seen from here, so any that may be a timeout keeps the claim
      if (wrapsInterceptors && mayLeaveHandlerRunning(error) && !isRouteMisconfigured(error)) {
        const what = isTimeoutError(error) ? 'timed out' : `failed (${describeError(error)}) behind another interceptor, maybe a timeout,`;
        this.logger.error(`${route} ${what} for key ${JSON.stringify(id)} inside PaymentWebhookIdempotencyInterceptor: ${TIMEOUT_INSIDE_FIX}`);
        throw new WorkOutcomeUnknown(error instanceof HttpException ? error : new PaymentWebhookHttpException(new WebhookHandlerFailedError({ cause: error })));
      }
      if (error instanceof HttpException) {
        // a 2xx thrown is the handler's answer that it took the delivery: the sender will not
        // retry it, so it is recorded as handled (released, every copy would run it again)
        const status = error.getStatus();
        if (status >= 200 && status < 300) return new ThrownAnswer(error);
        throw error;
      }
      this.logger.error(`Handler of ${route} failed for key ${JSON.stringify(id)} (its claim is released): ${describeError(error)}`, (error as Error)?.stack);
      throw new PaymentWebhookHttpException(new WebhookHandlerFailedError({ cause: error }));
    }
  }
}

/** A 2xx `HttpException` a handler threw: completed like a returned value, then thrown as the answer. */
class ThrownAnswer {
  constructor(readonly exception: HttpException) {}
}

/** `values` without its undefined entries (so they do not hide the defaults they are spread over). */
function definedOf<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** An idempotency interceptor, listed as an instance or a class: a request it claimed passes through another one. */
function isIdempotencyInterceptor(entry: unknown): boolean {
  if (entry instanceof PaymentWebhookIdempotencyInterceptor || entry === PaymentWebhookIdempotencyInterceptor) return true;
  // a subclass, listed as a class
  return typeof entry === 'function' && isInstanceOf(entry.prototype, PaymentWebhookIdempotencyInterceptor);
}

/** A refusal of the module's own (a receiver behind this interceptor): nothing ran, so it never leaves a handler running. */
function isRouteMisconfigured(error: unknown): boolean {
  return error instanceof PaymentWebhookHttpException && error.code === PaymentWebhookErrorCode.ROUTE_MISCONFIGURED;
}
