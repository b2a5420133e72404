import type { Logger } from '@nestjs/common';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { WebhookSecretNotConfiguredError } from './payment-webhook.errors.js';
import { parseWebhookEnvelope, type WebhookEnvelopeAnomaly } from './payment-webhook-envelope.js';
import {
  assertDeclaredSize,
  assertJsonContentType,
  boundedRawBody,
  type PaymentWebhookRequest,
  rawBodyMissingReporter,
  rawBodyOf,
} from './payment-webhook.request.js';
import { anomalyReporter } from './webhook-envelope-anomalies.js';
import { verifyWebhookSignature, WEBHOOK_SIGNATURE_HEADER, type VerifyWebhookSignatureOptions } from './webhook-signature.js';

/** One account's webhook settings, as the verifier reads them. */
export interface PaymentWebhookVerifierSettings {
  account: string;
  webhookSecrets: readonly string[];
  webhookToleranceSeconds: number;
  webhookMaxBodyBytes: number;
}

/**
 * Everything the receiver checks before an event may be deduplicated and dispatched,
 * in one synchronous call: content type (415), declared size (413), raw body present
 * (500 with the fix), actual size (413), signature and replay window (400/401), then the
 * envelope parsed from the verified bytes (400 when what dispatch needs is missing; other
 * fields are delivered as received, with a warning once per field and kind). Throws a
 * `PaymentWebhookError`.
 *
 * The steps are the functions `PaymentWebhookSignatureGuard` and
 * `PaymentWebhookEnvelopeGuard` use, so a custom route built from the guards answers the same.
 */
export class PaymentWebhookVerifier {
  private readonly signatureOptions: VerifyWebhookSignatureOptions;
  private readonly onAnomaly: (anomaly: WebhookEnvelopeAnomaly) => void;
  private readonly onRawBodyMissing: () => void;

  constructor(
    private readonly settings: PaymentWebhookVerifierSettings,
    logger: Logger,
  ) {
    this.signatureOptions = { toleranceSeconds: settings.webhookToleranceSeconds };
    this.onAnomaly = anomalyReporter(logger, settings.account);
    this.onRawBodyMissing = rawBodyMissingReporter(logger);
  }

  verify(request: PaymentWebhookRequest): AnyPaymentEvent {
    const headers = request.headers;
    const maxBytes = this.settings.webhookMaxBodyBytes;
    assertJsonContentType(headers);
    assertDeclaredSize(headers, maxBytes);
    const rawBody = boundedRawBody(rawBodyOf(request), maxBytes, this.onRawBodyMissing);
    this.assertSigned(rawBody, headers);
    return parseWebhookEnvelope(rawBody, this.onAnomaly);
  }

  /** Whether the request's raw body (kept by a body parser that then refused it) carries a valid signature. */
  hasValidSignature(request: PaymentWebhookRequest): boolean {
    const rawBody = rawBodyOf(request);
    if (rawBody === undefined || rawBody.length > this.settings.webhookMaxBodyBytes) return false;
    try {
      this.assertSigned(rawBody, request.headers);
      return true;
    } catch {
      return false;
    }
  }

  /** The signature and replay-window check, with this account's secrets and tolerance. */
  private assertSigned(rawBody: Buffer, headers: PaymentWebhookRequest['headers']): void {
    // a host route of an account without a secret (the module's route does not exist then): name its variable
    if (this.settings.webhookSecrets.length === 0) throw new WebhookSecretNotConfiguredError(this.settings.account);
    verifyWebhookSignature(rawBody, headers[WEBHOOK_SIGNATURE_HEADER], this.settings.webhookSecrets, this.signatureOptions);
  }
}
