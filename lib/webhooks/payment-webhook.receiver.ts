import { Injectable } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { WebhookUnknownAccountError } from './payment-webhook.errors.js';
import type { PaymentWebhookAck } from './payment-webhook.processor.js';
import type { PaymentWebhookRequest } from './payment-webhook.request.js';

/**
 * Receives a webhook delivery in a route of your own (with `webhookRoute: false`, or beside
 * the module's route): verifies the signature over the raw body, deduplicates by `eventId`
 * and dispatches to the handlers, with exactly the statuses and exactly-once behaviour of
 * the module's route.
 *
 * @example
 * ```ts
 * @Post('payments/webhook')
 * @HttpCode(200)
 * @Public()
 * receive(@Req() request: RawBodyRequest<Request>) {
 *   return this.receiver.receive(request);
 * }
 * ```
 * @publicApi
 */
@Injectable()
export class PaymentWebhookReceiver {
  constructor(private readonly accounts: PaymentAccountRegistry) {}

  /**
   * Resolves with the 2xx body (`{ received: true }`, plus `duplicate: true` for an event
   * handled before); rejects with a `PaymentWebhookHttpException` (`{ statusCode, code,
   * message }`) otherwise. `account` picks the merchant account whose secrets verify it; a
   * name no `forRoot()` registers is a 404 `WEBHOOK_UNKNOWN_ACCOUNT`.
   */
  receive(request: PaymentWebhookRequest, account: string = DEFAULT_PAYMENT_ACCOUNT): Promise<PaymentWebhookAck> {
    if (!this.accounts.has(account)) {
      // the name may come from the URL: a 404 like any unknown path, never the list of accounts
      return Promise.reject(new PaymentWebhookHttpException(new WebhookUnknownAccountError(String(account))));
    }
    const webhooks = this.accounts.require(account).webhooks;
    if (webhooks === undefined) {
      return Promise.reject(new Error(`Account '${account}' has no webhook processor (the module is not initialised yet)`));
    }
    return webhooks.process(request);
  }
}
