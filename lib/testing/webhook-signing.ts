import { createHmac } from 'node:crypto';

/** Options of {@link signWebhookPayload}. */
export interface SignWebhookPayloadOptions {
  /** Unix time in seconds put in `t=`. @default now */
  timestamp?: number;
}

/**
 * Builds the `X-Service-Signature` header value of spec 6.3 for `body`:
 * `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the webhook secret>`.
 * Sign the exact bytes you send; re-serialising JSON changes the digest.
 */
export function signWebhookPayload(body: string | Buffer, secret: string, opts: SignWebhookPayloadOptions = {}): string {
  const t = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const mac = createHmac('sha256', secret);
  mac.update(`${t}.`);
  mac.update(body);
  return `t=${t},v1=${mac.digest('hex')}`;
}
