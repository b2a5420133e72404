import { type CanActivate, type ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { prepareReceivedEvent } from '../events/payment-event.dispatcher.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { parseWebhookEnvelope } from './payment-webhook-envelope.js';
import { anomalyReporter } from './webhook-envelope-anomalies.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { PaymentWebhookError } from './payment-webhook.errors.js';
import { getPaymentWebhookState, type PaymentWebhookRequest } from './payment-webhook.request.js';

/**
 * Runs after `PaymentWebhookSignatureGuard`: parses the verified raw bytes (not the
 * adapter's parsed body, so handlers see exactly what was signed) as the service's
 * envelope and keeps the event on the request, where the idempotency interceptor
 * finds its `eventId` before any handler runs. The event has `account` (the default account,
 * or what `getAccount` says) and `receivedAt` set as on the module's route; its `environment`
 * is not judged (the route's live/sandbox check is `PaymentWebhookReceiver`'s).
 * @publicApi
 */
@Injectable()
export class PaymentWebhookEnvelopeGuard implements CanActivate {
  protected readonly logger = new Logger('PaymentWebhooks');
  private readonly onAnomaly = anomalyReporter(this.logger, DEFAULT_PAYMENT_ACCOUNT);

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<PaymentWebhookRequest>();
    try {
      // a body never supplies the module's fields (a forged canonicalStatus or account)
      getPaymentWebhookState(request).event = prepareReceivedEvent(this.parse(request), this.getAccount(context));
      return true;
    } catch (error) {
      throw error instanceof PaymentWebhookError ? new PaymentWebhookHttpException(error) : error;
    }
  }

  protected parse(request: PaymentWebhookRequest): AnyPaymentEvent {
    // Only bytes a signature guard verified: never the request's raw body (nobody checked it,
    // as when this guard is listed first or alone) nor the adapter's parsed copy.
    const rawBody = getPaymentWebhookState(request).rawBody;
    if (!Buffer.isBuffer(rawBody)) throw new PaymentWebhookGuardOrderError();
    return parseWebhookEnvelope(rawBody, this.onAnomaly);
  }

  /** The account the event is given to handlers as; override with a signature guard checking another account's secrets. */
  protected getAccount(_context: ExecutionContext): string {
    return DEFAULT_PAYMENT_ACCOUNT;
  }
}

/**
 * A route that runs `PaymentWebhookEnvelopeGuard` without `PaymentWebhookSignatureGuard` before
 * it: a mistake in the app, answered 500 (Nest's default) and logged with the fix.
 */
export class PaymentWebhookGuardOrderError extends Error {
  override readonly name = 'PaymentWebhookGuardOrderError';

  constructor() {
    super(
      'PaymentWebhookEnvelopeGuard found no verified body: list PaymentWebhookSignatureGuard (or a subclass) before it, ' +
        '@UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard); it never reads bytes nobody verified',
    );
  }
}
