import { type CanActivate, type ExecutionContext, Inject, Injectable, Logger } from '@nestjs/common';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PAYMENT_OPTION_DEFAULTS } from '../config/payment-options.defaults.js';
import { PAYMENT_RESOLVED_OPTIONS } from '../payment.constants.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import {
  PaymentWebhookError,
  WebhookBodyTooLargeError,
  WebhookRawBodyMissingError,
  WebhookUnsupportedMediaTypeError,
} from './payment-webhook.errors.js';
import { getPaymentWebhookState, headerValue, type PaymentWebhookRequest } from './payment-webhook.request.js';
import {
  verifyWebhookSignature,
  WEBHOOK_SIGNATURE_HEADER,
  type WebhookSignatureVerification,
} from './webhook-signature.js';

/** Default of `webhookMaxBodyBytes`: 1 MiB. */
export const DEFAULT_WEBHOOK_MAX_BODY_BYTES: number = PAYMENT_OPTION_DEFAULTS.webhookMaxBodyBytes;

/**
 * Lets a request through only when `X-Service-Signature` matches its raw body (spec 6.3).
 * Checks, in order: content type (415), declared size (413), raw body present (500 with
 * the fix), actual size (413), signature and replay window (400/401).
 *
 * The hooks are `protected` so an app can subclass it (other secret source, other clock,
 * a proxy that moves the header...) and register the subclass instead.
 */
@Injectable()
export class PaymentWebhookSignatureGuard implements CanActivate {
  protected readonly logger = new Logger('PaymentWebhooks');
  private rawBodyProblemLogged = false;

  constructor(@Inject(PAYMENT_RESOLVED_OPTIONS) protected readonly options: ResolvedPaymentOptions) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<PaymentWebhookRequest>();
    try {
      this.assertContentType(request);
      const maxBytes = this.getMaxBodyBytes(context);
      this.assertDeclaredSize(request, maxBytes);
      const rawBody = this.getRawBody(request);
      if (rawBody === undefined) {
        this.onRawBodyMissing(request);
        throw new WebhookRawBodyMissingError();
      }
      if (rawBody.length > maxBytes) {
        throw new WebhookBodyTooLargeError(maxBytes);
      }
      const verification = verifyWebhookSignature(rawBody, this.getSignatureHeader(request), this.getSecrets(context), {
        toleranceSeconds: this.getToleranceSeconds(context),
        now: this.now(),
      });
      getPaymentWebhookState(request).rawBody = rawBody;
      this.onVerified(request, verification);
      return true;
    } catch (error) {
      throw error instanceof PaymentWebhookError ? new PaymentWebhookHttpException(error) : error;
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

  /**
   * The bytes as received. `undefined` means the adapter did not keep them (app created
   * without `rawBody: true`, or another JSON parser ran first). A request without a body
   * has nothing to keep, so it gets an empty buffer and fails verification normally.
   */
  protected getRawBody(request: PaymentWebhookRequest): Buffer | undefined {
    if (Buffer.isBuffer(request.rawBody)) return request.rawBody;
    const length = headerValue(request.headers, 'content-length');
    const chunked = headerValue(request.headers, 'transfer-encoding') !== undefined;
    if (!chunked && (length === undefined || length.trim() === '0')) return Buffer.alloc(0);
    return undefined;
  }

  /** The spec sends JSON (6); anything else is refused before the body is looked at. */
  protected assertContentType(request: PaymentWebhookRequest): void {
    const type = headerValue(request.headers, 'content-type');
    // What the service sends, checked without allocating; any other spelling is normalised.
    if (type === 'application/json') return;
    const mediaType = type === undefined ? '' : type.split(';', 1)[0]!.trim().toLowerCase();
    if (mediaType !== 'application/json') {
      throw new WebhookUnsupportedMediaTypeError();
    }
  }

  protected assertDeclaredSize(request: PaymentWebhookRequest, maxBytes: number): void {
    const length = Number(headerValue(request.headers, 'content-length'));
    if (Number.isFinite(length) && length > maxBytes) {
      throw new WebhookBodyTooLargeError(maxBytes);
    }
  }

  /** Logs the fix once per guard instance: loud enough to notice, not once per delivery. */
  protected onRawBodyMissing(_request: PaymentWebhookRequest): void {
    if (this.rawBodyProblemLogged) return;
    this.rawBodyProblemLogged = true;
    this.logger.error(new WebhookRawBodyMissingError().message);
  }

  protected onVerified(request: PaymentWebhookRequest, verification: WebhookSignatureVerification): void {
    getPaymentWebhookState(request).verification = verification;
  }
}
