import { createWebhookSignatureHeader } from '../webhooks/webhook-signature.js';

/** Options of {@link signWebhookPayload}. @publicApi */
export interface SignWebhookPayloadOptions {
  /** Unix time in seconds put in `t=`. @default now */
  timestamp?: number;
}

/**
 * Builds the `X-Service-Signature` header value for `body`:
 * `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the webhook secret>`.
 * Sign the exact bytes you send; re-serialising JSON changes the digest.
 * Shares the HMAC code of the module's verifier; the simulator's tests check it
 * against an independent computation.
 * @publicApi
 */
export function signWebhookPayload(body: string | Buffer, secret: string, opts: SignWebhookPayloadOptions = {}): string {
  return createWebhookSignatureHeader(body, secret, opts.timestamp ?? Math.floor(Date.now() / 1000));
}
