import { type CanActivate, type ExecutionContext, Inject, Injectable, type Logger } from '@nestjs/common';
import { getPaymentOptionsToken } from '../accounts/payment-account.tokens.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { logRouteFixOnce, routeNameOf } from './webhook-route-fixes.js';
import { PaymentWebhookError, WebhookSecretNotConfiguredError } from './payment-webhook.errors.js';
import {
  assertDeclaredSize,
  assertJsonContentType,
  boundedRawBody,
  getPaymentWebhookState,
  headerValue,
  type PaymentWebhookRequest,
  rawBodyMissingReporter,
  rawBodyOf,
} from './payment-webhook.request.js';
import {
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
  type WebhookSignatureVerification,
} from './webhook-signature.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/**
 * Building block for a route of your own: lets a request through only when
 * `X-Service-Signature` (HMAC-SHA256 of `<t>.<raw body>`) matches one of the default
 * account's webhook secrets within the replay window. Checks, in order: content type (415),
 * declared size (413), raw body present (500 with the fix), actual size (413), signature
 * and replay window (400/401).
 *
 * The module's own route and `PaymentWebhookReceiver` do not use it (both run the same checks
 * through `PaymentWebhookProcessor`, in one call). The hooks are `protected` so an app can subclass it (other secret source,
 * other clock, a proxy that moves the header...) and register the subclass instead.
 * @publicApi
 */
@Injectable()
export class PaymentWebhookSignatureGuard implements CanActivate {
  protected readonly logger: Logger = new PaymentLogger('PaymentWebhooks');
  private readonly logRawBodyMissing = rawBodyMissingReporter(this.logger);

  constructor(@Inject(getPaymentOptionsToken()) protected readonly options: ResolvedPaymentOptions) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<PaymentWebhookRequest>();
    try {
      this.assertContentType(request);
      const maxBytes = this.getMaxBodyBytes(context);
      this.assertDeclaredSize(request, maxBytes);
      const rawBody = boundedRawBody(this.getRawBody(request), maxBytes, () => this.onRawBodyMissing(request));
      const verification = verifyWebhookSignature(rawBody, this.getSignatureHeader(request), this.getSecrets(context), {
        toleranceSeconds: this.getToleranceSeconds(context),
        now: this.now(),
      });
      getPaymentWebhookState(request).rawBody = rawBody;
      this.onVerified(request, verification);
      return true;
    } catch (error) {
      if (!(error instanceof WebhookSecretNotConfiguredError)) throw error instanceof PaymentWebhookError ? new PaymentWebhookHttpException(error) : error;
      // the options' account (a subclass's for account 'eu' reads PAYMENT_EU_WEBHOOK_SECRET); our
      // side's fault, so said at error, once per route: every delivery would get 500 unexplained
      const missing = new WebhookSecretNotConfiguredError(this.options.account);
      logRouteFixOnce(this.logger, missing.message, routeNameOf(context));
      throw new PaymentWebhookHttpException(missing);
    }
  }

  /** Secrets tried in order; several during a rotation. */
  protected getSecrets(_context: ExecutionContext): readonly string[] {
    return this.options.webhookSecrets;
  }

  protected getToleranceSeconds(_context: ExecutionContext): number {
    return this.options.webhookToleranceSeconds;
  }

  protected getMaxBodyBytes(_context: ExecutionContext): number {
    return this.options.webhookMaxBodyBytes;
  }

  /** Current time in milliseconds. */
  protected now(): number {
    return Date.now();
  }

  protected getSignatureHeader(request: PaymentWebhookRequest): string | undefined {
    return headerValue(request.headers, WEBHOOK_SIGNATURE_HEADER);
  }

  /** The bytes as received (see `rawBodyOf`: an empty buffer without a body); `undefined` when nobody kept them. */
  protected getRawBody(request: PaymentWebhookRequest): Buffer | undefined {
    return rawBodyOf(request);
  }

  /** JSON only: anything else is refused (415) before the body is looked at. */
  protected assertContentType(request: PaymentWebhookRequest): void {
    assertJsonContentType(request.headers);
  }

  /** A declared `Content-Length` over the limit is refused (413) before hashing. */
  protected assertDeclaredSize(request: PaymentWebhookRequest, maxBytes: number): void {
    assertDeclaredSize(request.headers, maxBytes);
  }

  /** Logs the fix once per guard instance: loud enough to notice, not once per delivery. */
  protected onRawBodyMissing(_request: PaymentWebhookRequest): void {
    this.logRawBodyMissing();
  }

  /** Called once a signature matched, with what it learned (`secretIndex`: watch a rotation). Does nothing by default. */
  protected onVerified(_request: PaymentWebhookRequest, _verification: WebhookSignatureVerification): void {}
}
