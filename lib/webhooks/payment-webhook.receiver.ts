import { Injectable } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { WebhookDeliveryTelemetry } from '../telemetry/webhook-delivery.telemetry.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { routeMisconfigured } from './webhook-route-fixes.js';
import { WebhookUnknownAccountError } from './payment-webhook.errors.js';
import type { PaymentWebhookAck } from './payment-webhook.processor.js';
import { type PaymentWebhookRequest, rawBodyOf } from './payment-webhook.request.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/**
 * Unknown-account deliveries up to this size are checked for a registered signer (one HMAC per
 * account and secret): anyone can send them, so the check must cost about what a delivery does.
 * The service's events are a few KB.
 */
const SIGNER_CHECK_MAX_BYTES = 64 * 1024;

/** The fix of a route that hands `receive()` something other than the HTTP request. */
const NOT_A_REQUEST_FIX =
  'PaymentWebhookReceiver.receive() was given no HTTP request (no headers): pass the request itself, ' +
  'receive(@Req() request), not its parsed body (@Body()); the signature is checked over its raw bytes';

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
  private readonly logger = new PaymentLogger('PaymentWebhooks');
  /** Counts and logs deliveries for a name no account has; `(unknown)` is no account name, so never a real one. */
  private readonly unknownAccounts = new WebhookDeliveryTelemetry('(unknown)', this.logger);
  private unknownAccountLogged = false;

  constructor(private readonly accounts: PaymentAccountRegistry) {}

  /**
   * Resolves with the 2xx body (`{ received: true }`, plus `duplicate: true` for an event
   * handled before, `queued: true` in queue mode, `ignored: 'environment'` for an event of the
   * other environment); rejects with a `PaymentWebhookHttpException` (`{ statusCode, code,
   * message }`) otherwise. `account` picks the merchant account whose secrets verify it; a
   * name no `forRoot()` registers is a 404 `WEBHOOK_UNKNOWN_ACCOUNT`. Called before the app's
   * modules are initialised (the account has no processor yet), it rejects with a plain `Error`.
   */
  receive(request: PaymentWebhookRequest, account: string = DEFAULT_PAYMENT_ACCOUNT): Promise<PaymentWebhookAck> {
    // `@Body()` instead of `@Req()`: the app's mistake, said with the fix (it crashed on the missing headers)
    if (typeof request !== 'object' || request === null || typeof request.headers !== 'object' || request.headers === null) {
      // counted as every refusal is (by the account's processor when it is one); the fix is logged once
      const refusal = routeMisconfigured(this.logger, NOT_A_REQUEST_FIX);
      const webhooks = this.accounts.registered(account)?.webhooks;
      return Promise.reject(webhooks ? webhooks.refusedBeforeProcessing(refusal) : this.unknownAccounts.rejected(refusal, performance.now(), false));
    }
    if (!this.accounts.has(account)) {
      return Promise.reject(this.unknownAccount(account, performance.now(), request));
    }
    const webhooks = this.accounts.require(account).webhooks;
    if (webhooks === undefined) {
      return Promise.reject(new Error(`Account '${account}' has no webhook processor (the module is not initialised yet)`));
    }
    return webhooks.process(request);
  }

  /**
   * The 404 for a name no `forRoot()` registers: like any unknown path, its answer never lists
   * the accounts (the name may come from the URL). Counted and logged as every refusal is. A
   * delivery signed with a registered account's secret comes from the service: the first such
   * is logged at `error`, naming the registered accounts and the signer, since a host calling
   * `receive()` with a wrong name or none gets every delivery refused and, after the service's
   * retries, abandoned; later ones at `debug`. Unsigned ones (anyone can send them) only at
   * `debug`, and never with the name they asked for.
   */
  private unknownAccount(account: string, startedAt: number, request: PaymentWebhookRequest): PaymentWebhookHttpException {
    const signer = this.unknownAccountLogged ? undefined : this.signerOf(request);
    const first = signer !== undefined;
    // the first signed one's line is the error below (one line per delivery)
    const answer = this.unknownAccounts.rejected(new PaymentWebhookHttpException(new WebhookUnknownAccountError(String(account))), startedAt, !first);
    if (first) {
      this.unknownAccountLogged = true;
      const name = account === DEFAULT_PAYMENT_ACCOUNT ? 'without an account name (the default account)' : `for account ${JSON.stringify(String(account)).slice(0, 80)}`;
      this.logger.error(
        `PaymentWebhookReceiver.receive() was called ${name}, which no PaymentModule.forRoot() registers ` +
          `(registered: ${this.accounts.names().join(', ') || 'none'}): a delivery signed with the secret of account '${signer}' ` +
          'was answered 404 WEBHOOK_UNKNOWN_ACCOUNT. Pass the name of the account whose secret signs these deliveries; later ones are logged at debug',
      );
    }
    return answer;
  }

  /** The registered account whose secret signs the request, if any (bodies up to `SIGNER_CHECK_MAX_BYTES`). */
  private signerOf(request: PaymentWebhookRequest): string | undefined {
    const rawBody = rawBodyOf(request);
    if (rawBody === undefined || rawBody.length > SIGNER_CHECK_MAX_BYTES) return undefined;
    return this.accounts.names().find((name) => this.accounts.require(name).webhooks?.isSignedForThisAccount(request) === true);
  }
}
