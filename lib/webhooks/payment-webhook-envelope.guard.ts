import { type CanActivate, type ExecutionContext, Injectable, type Logger, Optional } from '@nestjs/common';
import { isPaymentAccountName, PAYMENT_ACCOUNT_NAME_RULE } from '../accounts/payment-account.name.js';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { prepareReceivedEvent } from '../events/received-payment-event.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { parseWebhookEnvelope, type WebhookEnvelopeAnomaly } from './payment-webhook-envelope.js';
import { anomalyReporter } from './webhook-envelope-anomalies.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { routeMisconfigured, routeNameOf } from './webhook-route-fixes.js';
import { PaymentWebhookError } from './payment-webhook.errors.js';
import { getPaymentWebhookState, type PaymentWebhookRequest } from './payment-webhook.request.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/**
 * Runs after `PaymentWebhookSignatureGuard`: parses the verified raw bytes (not the
 * adapter's parsed body, so handlers see exactly what was signed) as the service's
 * envelope and keeps the event on the request, where the idempotency interceptor
 * finds its `eventId` before any handler runs. The event has `account` (the default account,
 * or what `getAccount` says) and `receivedAt` set as on the module's route; its `environment`
 * is not judged (the live/sandbox check is `PaymentWebhookProcessor`'s, behind the module's
 * route and `PaymentWebhookReceiver`).
 * @publicApi
 */
@Injectable()
export class PaymentWebhookEnvelopeGuard implements CanActivate {
  protected readonly logger: Logger = new PaymentLogger('PaymentWebhooks');
  /** One anomaly reporter per account the guard gives events to (see `getAccount`). */
  private readonly anomalyReporters = new Map<string, (anomaly: WebhookEnvelopeAnomaly) => void>();

  /** ES-private: a subclass may have an `accounts` of its own. */
  readonly #accounts: PaymentAccountRegistry | undefined;

  /** `accounts`: the app's, where the module is imported; built by hand without it, `getAccount` is not checked. */
  constructor(@Optional() accounts?: PaymentAccountRegistry) {
    this.#accounts = accounts;
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<PaymentWebhookRequest>();
    try {
      // a body never supplies the module's fields (a forged canonicalStatus or account)
      const account = this.getAccount(context);
      // the host's code named it, and the signature guard verified the delivery: the app's fault, not the sender's
      // (checked built by hand too: the interceptor's key '<account>:event:<id>' needs a name without ':')
      // each name said once per route (the first one): names may come from the request
      if (!isPaymentAccountName(account)) {
        throw routeMisconfigured(this.logger, notAnAccountNameFix(account), routeNameOf(context), undefined, 'not an account name');
      }
      if (this.#accounts !== undefined && !this.#accounts.has(account)) {
        throw routeMisconfigured(this.logger, unknownAccountFix(account, this.#accounts.names()), routeNameOf(context), undefined, 'unknown account');
      }
      getPaymentWebhookState(request).event = prepareReceivedEvent(this.parse(request, this.anomalyReporter(account), context), account);
      return true;
    } catch (error) {
      throw error instanceof PaymentWebhookError ? new PaymentWebhookHttpException(error) : error;
    }
  }

  /** `context`, when given, names the route in the log of a misconfiguration. */
  protected parse(request: PaymentWebhookRequest, onAnomaly?: (anomaly: WebhookEnvelopeAnomaly) => void, context?: ExecutionContext): AnyPaymentEvent {
    // Only bytes a signature guard verified: never the request's raw body (nobody checked it,
    // as when this guard is listed first or alone) nor the adapter's parsed copy.
    const rawBody = getPaymentWebhookState(request).rawBody;
    if (!Buffer.isBuffer(rawBody)) throw routeMisconfigured(this.logger, GUARD_ORDER_FIX, context && routeNameOf(context));
    return parseWebhookEnvelope(rawBody, onAnomaly);
  }

  private anomalyReporter(account: string): (anomaly: WebhookEnvelopeAnomaly) => void {
    let report = this.anomalyReporters.get(account);
    if (report === undefined) {
      // built by hand, nothing checks `getAccount`: a name read from the request must not grow this without end
      if (this.anomalyReporters.size === MAX_ANOMALY_REPORTERS) this.anomalyReporters.clear();
      this.anomalyReporters.set(account, (report = anomalyReporter(this.logger, account)));
    }
    return report;
  }

  /** The account the event is given to handlers as; override with a signature guard checking another account's secrets. */
  protected getAccount(_context: ExecutionContext): string {
    return DEFAULT_PAYMENT_ACCOUNT;
  }
}

/** Most accounts whose reported anomalies are remembered; past it they are forgotten (and may be warned about again). */
const MAX_ANOMALY_REPORTERS = 64;

/** The fix of a route that runs `PaymentWebhookEnvelopeGuard` without `PaymentWebhookSignatureGuard` before it. */
const GUARD_ORDER_FIX =
  'PaymentWebhookEnvelopeGuard found no verified body: list PaymentWebhookSignatureGuard (or a subclass) before it, ' +
  '@UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard); it never reads bytes nobody verified';

/** The fix of an envelope guard whose `getAccount` returns something that cannot be an account (a tenant read from the request). */
function notAnAccountNameFix(account: unknown): string {
  // a string is shown bounded (it may come from the request); anything else by its type
  const given = typeof account === 'string' ? JSON.stringify(account.slice(0, 80)) : `a value of type ${account === null ? 'null' : typeof account}`;
  return (
    `PaymentWebhookEnvelopeGuard.getAccount returned ${given}, which is not an account name (${PAYMENT_ACCOUNT_NAME_RULE}; ` +
    "ids of two accounts must never share a store key): map the request's tenant to a registered account name"
  );
}

/** The fix of an envelope guard whose `getAccount` names an account nobody registered (a typo, another case). */
function unknownAccountFix(account: string, registered: readonly string[]): string {
  return (
    `PaymentWebhookEnvelopeGuard gives this route's events to account '${account}', which no PaymentModule.forRoot() registers ` +
    `(registered: ${registered.map((name) => `'${name}'`).join(', ') || 'none'}): make getAccount return one of them`
  );
}
