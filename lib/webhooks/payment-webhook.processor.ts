import { Inject, Injectable, type OnApplicationShutdown, type OnModuleDestroy, Optional } from '@nestjs/common';
import type { Span } from '@opentelemetry/api';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { paymentEnvName } from '../config/payment-env.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PaymentEventDispatcher } from '../events/payment-event.dispatcher.js';
import { prepareReceivedEvent } from '../events/received-payment-event.js';
import { PaymentEventReconciliationError } from '../events/payment-event.errors.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { type PaymentGatewayService, requestsOnTheWire } from '../client/payment-gateway.service.js';
import { PAYMENT_ACCOUNT_CLIENT, PAYMENT_ACCOUNT_OPTIONS, PAYMENT_ACCOUNT_QUEUE, PAYMENT_ACCOUNT_STORE, PAYMENT_WEBHOOK_REQUEST_STATE } from '../payment.constants.js';
import type { PaymentEventQueue } from '../queue/payment-event-queue.js';
import { PaymentWorkerShutdown } from '../queue/payment-worker-shutdown.service.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { webhookStoreRedisUrl } from '../stores/webhook-event-store.providers.js';
import type { PaymentWebhookOutcome } from '../telemetry/payment-telemetry.names.js';
import { WebhookDeliveryTelemetry } from '../telemetry/webhook-delivery.telemetry.js';
import { PaymentWebhookHttpException, toWebhookHttpException } from './payment-webhook-http.exception.js';
import { routeMisconfigured } from './webhook-route-fixes.js';
import { PaymentWebhookError, type PaymentWebhookErrorBody, WebhookHandlerFailedError, WebhookReconciliationFailedError } from './payment-webhook.errors.js';
import type { PaymentWebhookRequest } from './payment-webhook.request.js';
import { PaymentWebhookVerifier } from './payment-webhook.verifier.js';
import { ALREADY_PROCESSED, WebhookDeduplicator } from './webhook-deduplicator.js';
import { accountDeduplicationSettings, type WebhookDeduplicationSettings } from './webhook-deduplication.settings.js';
import { webhookEventKey } from './webhook-store-keys.js';
import { isFromOtherEnvironment } from './webhook-event-environment.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/**
 * Answer body of a delivery that was handled (or had been handled before).
 * @publicApi
 */
export interface PaymentWebhookAck {
  received: true;
  /** The event was handled for an earlier delivery; no handler ran. */
  duplicate?: true;
  /** Signed for the other environment (a sandbox event on a live account, or the reverse): acknowledged, not dispatched. */
  ignored?: 'environment';
  /** Queue mode: the event is in the queue; a worker runs the handlers. */
  queued?: true;
}


/** The fix of a host route that runs `PaymentWebhookIdempotencyInterceptor` around `PaymentWebhookReceiver`. */
const RECEIVER_BEHIND_INTERCEPTOR_FIX =
  'PaymentWebhookReceiver verifies and deduplicates by itself: remove PaymentWebhookIdempotencyInterceptor (and the ' +
  'signature and envelope guards) from the route that calls receive(); with both, every delivery found its own claim held';

/**
 * One account's webhook pipeline: verify → deduplicate → dispatch, in one call per delivery.
 * Every rejection is a `PaymentWebhookHttpException` carrying `{ statusCode, code, message }`,
 * thrown so the host's global exception filter sees it; 2xx only when the handlers completed
 * (or had completed for an earlier delivery), in queue mode once Redis holds the event, or for
 * a signed event of the other environment, which runs nothing (it would be retried for ever).
 */
@Injectable()
export class PaymentWebhookProcessor implements OnModuleDestroy, OnApplicationShutdown {
  private readonly logger = new PaymentLogger('PaymentWebhooks');
  private readonly account: string;
  private readonly live: boolean;
  private readonly verifier: PaymentWebhookVerifier;
  private readonly deduplicator: WebhookDeduplicator;
  private readonly dedupe: WebhookDeduplicationSettings;
  private readonly telemetry: WebhookDeliveryTelemetry;
  private readonly shutdownTimeoutMs: number;

  constructor(
    @Inject(PAYMENT_ACCOUNT_OPTIONS) options: ResolvedPaymentOptions,
    @Inject(PAYMENT_ACCOUNT_STORE) store: WebhookEventStore,
    private readonly dispatcher: PaymentEventDispatcher,
    private readonly accounts: PaymentAccountRegistry,
    @Optional() @Inject(PAYMENT_ACCOUNT_QUEUE) private readonly queue?: PaymentEventQueue | null,
    @Optional() private readonly workers?: PaymentWorkerShutdown,
    @Optional() @Inject(PAYMENT_ACCOUNT_CLIENT) private readonly client?: PaymentGatewayService,
  ) {
    this.account = options.account;
    this.live = options.environment === 'live';
    this.verifier = new PaymentWebhookVerifier(options, this.logger);
    // The delivery's one log line (with the event) says when the store is down.
    this.deduplicator = new WebhookDeduplicator(store, this.logger, { logClaimFailures: false, foldReleaseFailures: true });
    const queueRedisUrl = options.processing === 'queue' ? options.queueRedisUrl : undefined;
    this.telemetry = new WebhookDeliveryTelemetry(this.account, this.logger, [webhookStoreRedisUrl(options), queueRedisUrl]);
    this.dedupe = accountDeduplicationSettings(options);
    this.shutdownTimeoutMs = options.webhookShutdownTimeoutMs;
    accounts.attachWebhooks(this.account, this, dispatcher, store);
  }

  /**
   * Verifies, deduplicates and dispatches one delivery; resolves with the 2xx body. Not an
   * async function itself: verification is synchronous, and a delivery costs one async frame
   * (`answer`) instead of two.
   */
  process(request: PaymentWebhookRequest): Promise<PaymentWebhookAck> {
    const startedAt = performance.now();
    let event: AnyPaymentEvent;
    try {
      // the interceptor holds this event's key: claiming it again here would find it held (409 for good)
      const claimedBy = request[PAYMENT_WEBHOOK_REQUEST_STATE]?.claimedByInterceptor;
      if (claimedBy !== undefined) throw routeMisconfigured(this.logger, RECEIVER_BEHIND_INTERCEPTOR_FIX, claimedBy);
      event = this.verifier.verify(request);
    } catch (error) {
      return Promise.reject(this.telemetry.rejected(toWebhookHttpException(error), startedAt));
    }
    // No closure, no span when the host has no tracing.
    const tracer = this.telemetry.tracer();
    if (tracer === undefined) return this.answer(event, startedAt);
    return this.telemetry.traced(tracer, event, (span) => this.answer(event, startedAt, span));
  }

  /** Whether the request's raw body carries a valid signature made with one of this account's secrets. */
  isSignedForThisAccount(request: PaymentWebhookRequest): boolean {
    return this.verifier.hasValidSignature(request);
  }

  /**
   * Counts and logs a delivery to this account's route that the HTTP adapter's body parser
   * refused before `process` could run (see `webhook-body-parser-refusals.ts`).
   */
  refusedByBodyParser(request: PaymentWebhookRequest, answer: PaymentWebhookErrorBody): void {
    this.telemetry.refusedByBodyParser(answer.statusCode, answer.code, this.verifier.hasValidSignature(request));
  }

  /**
   * What the route's checks (content type, size, signature, envelope) refuse `request` with, as
   * `process` would answer it, or `undefined` when it passes them. Nothing is counted or logged.
   */
  verificationRefusal(request: PaymentWebhookRequest): PaymentWebhookErrorBody | undefined {
    try {
      this.verifier.verify(request);
      return undefined;
    } catch (error) {
      return error instanceof PaymentWebhookError ? error.toResponseBody() : undefined;
    }
  }

  /** Counts a refusal made before `process` could run (a receiver given no request); the refusal logged its fix. */
  refusedBeforeProcessing<E>(answer: E): E {
    return this.telemetry.rejected(answer, performance.now(), false);
  }

  /**
   * Answers a verified event. Whichever branch answers sets `outcome` (or throws), and it is
   * recorded once below: metrics, span and the log line of a non-2xx answer.
   */
  private async answer(event: AnyPaymentEvent, startedAt: number, span?: Span): Promise<PaymentWebhookAck> {
    let outcome: PaymentWebhookOutcome;
    let ack: PaymentWebhookAck;
    try {
      if (isFromOtherEnvironment(event.environment, this.live)) {
        this.warnOtherEnvironment(event);
        outcome = 'ignored';
        // a new object per answer: a host interceptor may add to it
        ack = { received: true, ignored: 'environment' };
      } else if (this.queue) {
        // queue mode: answered once Redis holds the event; a worker runs the handlers
        ack = await this.queue.enqueue(event);
        outcome = ack.duplicate ? 'duplicate' : 'queued';
      } else {
        const key = webhookEventKey(this.account, event.eventId);
        const result = await this.deduplicator.run(key, this.dedupe, this.dispatchEvent, event);
        const duplicate = result === ALREADY_PROCESSED;
        outcome = duplicate ? 'duplicate' : 'handled';
        ack = duplicate ? { received: true, duplicate: true } : { received: true };
      }
    } catch (error) {
      const answer = toWebhookHttpException(error);
      this.telemetry.failed(event, answer, startedAt, span, this.deduplicator.unreleasedClaimOf(error));
      throw answer;
    }
    this.telemetry.answered(event, outcome, startedAt, span);
    return ack;
  }


  /** Answered 2xx (so the service does not retry an event this account will never take), and logged for the operator (at most 10 a minute at `warn`: a replay repeats it). */
  private warnOtherEnvironment(event: AnyPaymentEvent): void {
    // signed with this account's secret: more often the account's environment setting is wrong than the event
    const check = this.live
      ? 'if the account really is live, this is a sandbox event sent to its URL'
      : `if the account is live, set ${paymentEnvName('environment', this.account)}=live (option environment: 'live')`;
    this.telemetry.ignoredOtherEnvironment(
      `Ignored ${event.eventType} event ${event.eventId}: signed for account ${this.account} (${this.live ? 'live' : 'sandbox'}) ` +
        `but its environment is ${JSON.stringify(event.environment)}; answered 2xx without dispatching. Check the setting: ${check}`,
    );
  }

  /**
   * Waits (up to `webhookShutdownTimeoutMs`) for deliveries still in their handlers, those
   * whose sender hung up included: the HTTP server's drain waits only for open connections,
   * and the store closes right after it. Module-destroy hooks run before that drain, but Nest
   * runs those of the modules that import this one first: a handler's own dependencies should
   * let go in `onApplicationShutdown`, not `onModuleDestroy` (see the README).
   * The app's queue workers (any account's) stop taking jobs now too, and drain meanwhile:
   * Nest runs the accounts' hooks one after another, and a worker stopped only in its own
   * account's hook would take jobs, then drain, after this account's wait.
   */
  onModuleDestroy(): Promise<void> {
    void this.workers?.stopAll(); // never rejects; the workers' own hooks wait for it
    return this.deduplicator.finishRunning(this.shutdownWaitMs('destroy'), `account ${this.account}`);
  }

  /**
   * Once the HTTP server has drained, before the store closes (it is closed by a provider this
   * one outlives in Nest's shutdown order): waits for deliveries that started after
   * `onModuleDestroy` and whose sender hung up, then stops claim renewal. A handler still
   * running must keep its claim and record completion, or the service's retry, here or on
   * another instance, would run it a second time. One still running after the wait may be waiting
   * on a call of its account's client (a refund): see `drainForShutdown`, run for every account
   * together before any store closes.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.deduplicator.finishRunning(this.shutdownWaitMs('shutdown'), `account ${this.account}`);
    await this.accounts.drainClientsForShutdown();
    this.deduplicator.close();
  }

  /**
   * Deliveries still running after the wait: this account's client is closed now, not after every
   * account's hooks (waiting calls give up, nothing new is sent while shutdown goes on), and the
   * requests it has on the wire get their answers, as the client's own shutdown would wait for them
   * anyway; after those, the deliveries get the time-out once more to record completion before the
   * store closes. Run by the registry for all accounts at once.
   */
  async drainForShutdown(): Promise<void> {
    if (this.deduplicator.runningCount === 0 || this.client === undefined) return;
    const onTheWire = requestsOnTheWire(this.client) > 0;
    await this.client.onApplicationShutdown();
    if (onTheWire) await this.deduplicator.whenIdle(this.shutdownTimeoutMs);
  }

  /** What is left of this account's time-out in a shutdown step all accounts share (see `shutdownStepStart`). */
  private shutdownWaitMs(step: 'destroy' | 'shutdown'): number {
    return Math.max(0, this.accounts.shutdownStepStart(step) + this.shutdownTimeoutMs - Date.now());
  }

  /** `dispatch`, bound once: the deduplicator calls it without a closure per delivery. */
  private readonly dispatchEvent = (event: AnyPaymentEvent): Promise<void> => this.dispatch(event);

  /** Runs the handlers; maps their failure to the answer (logged with the delivery by `answer`). */
  private async dispatch(event: AnyPaymentEvent): Promise<void> {
    prepareReceivedEvent(event, this.account);
    try {
      await this.dispatcher.dispatch(event);
    } catch (error) {
      if (error instanceof PaymentEventReconciliationError) {
        // 503: the service, not a handler, is at fault; it retries the delivery
        throw new PaymentWebhookHttpException(new WebhookReconciliationFailedError({ cause: error }));
      }
      // 500 so the service retries
      throw new PaymentWebhookHttpException(new WebhookHandlerFailedError({ cause: error }));
    }
  }
}
