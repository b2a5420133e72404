import { Inject, Injectable, Logger, type OnModuleDestroy, Optional } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PaymentEventDispatcher, prepareReceivedEvent } from '../events/payment-event.dispatcher.js';
import { PaymentEventReconciliationError } from '../events/payment-event.errors.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { PAYMENT_ACCOUNT_OPTIONS, PAYMENT_ACCOUNT_QUEUE, PAYMENT_ACCOUNT_STORE } from '../payment.constants.js';
import type { PaymentEventQueue } from '../queue/payment-event-queue.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { PaymentWebhookError, WebhookHandlerFailedError, WebhookReconciliationFailedError } from './payment-webhook.errors.js';
import type { PaymentWebhookRequest } from './payment-webhook.request.js';
import { PaymentWebhookVerifier } from './payment-webhook.verifier.js';
import { ALREADY_PROCESSED, type WebhookDeduplicationSettings, WebhookDeduplicator } from './webhook-deduplicator.js';
import { webhookEventKey } from './webhook-store-keys.js';

/**
 * Answer body of a delivery that was handled (or had been handled before).
 * @publicApi
 */
export interface PaymentWebhookAck {
  received: true;
  duplicate?: true;
  /** Queue mode: the event is in the queue; a worker runs the handlers. */
  queued?: true;
}

const RECEIVED: PaymentWebhookAck = Object.freeze({ received: true });
const DUPLICATE: PaymentWebhookAck = Object.freeze({ received: true, duplicate: true });

/** Renewal of a running claim stops after 15 minutes, so a hung handler cannot block its event for good. */
const MAX_LEASE_RENEWAL_MS = 15 * 60 * 1000;

/**
 * One account's webhook pipeline: verify → deduplicate → dispatch, in one call per delivery.
 * Every rejection is a `PaymentWebhookHttpException` carrying `{ statusCode, code, message }`,
 * thrown so the host's global exception filter sees it; 2xx only when the handlers completed
 * (or had completed for an earlier delivery), or in queue mode once Redis holds the event.
 */
@Injectable()
export class PaymentWebhookProcessor implements OnModuleDestroy {
  private readonly logger = new Logger('PaymentWebhooks');
  private readonly account: string;
  private readonly verifier: PaymentWebhookVerifier;
  private readonly deduplicator: WebhookDeduplicator;
  private readonly dedupe: WebhookDeduplicationSettings;

  constructor(
    @Inject(PAYMENT_ACCOUNT_OPTIONS) options: ResolvedPaymentOptions,
    @Inject(PAYMENT_ACCOUNT_STORE) store: WebhookEventStore,
    private readonly dispatcher: PaymentEventDispatcher,
    accounts: PaymentAccountRegistry,
    @Optional() @Inject(PAYMENT_ACCOUNT_QUEUE) private readonly queue?: PaymentEventQueue | null,
  ) {
    this.account = options.account;
    this.verifier = new PaymentWebhookVerifier(options, this.logger);
    this.deduplicator = new WebhookDeduplicator(store, this.logger);
    this.dedupe = {
      leaseMs: options.webhookLeaseMs,
      retentionMs: options.webhookRetentionMs,
      completeAttempts: 3,
      maxLeaseRenewalMs: MAX_LEASE_RENEWAL_MS,
    };
    accounts.attachWebhooks(this.account, this, dispatcher);
  }

  /** Verifies, deduplicates and dispatches one delivery; resolves with the 2xx body. */
  async process(request: PaymentWebhookRequest): Promise<PaymentWebhookAck> {
    let event: AnyPaymentEvent;
    try {
      event = this.verifier.verify(request);
    } catch (error) {
      throw error instanceof PaymentWebhookError ? new PaymentWebhookHttpException(error) : error;
    }
    // queue mode: answered once Redis holds the event; a worker runs the handlers
    if (this.queue) return this.queue.enqueue(event);
    const key = webhookEventKey(this.account, event.eventId);
    const outcome = await this.deduplicator.run(key, this.dedupe, () => this.dispatch(event));
    return outcome === ALREADY_PROCESSED ? DUPLICATE : RECEIVED;
  }

  onModuleDestroy(): void {
    this.deduplicator.close();
  }

  private async dispatch(event: AnyPaymentEvent): Promise<void> {
    prepareReceivedEvent(event, this.account);
    try {
      await this.dispatcher.dispatch(event);
    } catch (error) {
      if (error instanceof PaymentEventReconciliationError) {
        this.logger.warn(`${error.message}; answering 503 so the service retries`);
        throw new PaymentWebhookHttpException(new WebhookReconciliationFailedError({ cause: error }));
      }
      this.logger.error(
        `Handling ${event.eventType} event ${event.eventId} (account ${this.account}) failed; answering 500 so the service retries: ` +
          (error instanceof Error ? error.message : String(error)),
      );
      throw new PaymentWebhookHttpException(new WebhookHandlerFailedError({ cause: error }));
    }
  }
}
