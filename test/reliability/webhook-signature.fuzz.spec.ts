import fc from 'fast-check';
import {
  WebhookSecretNotConfiguredError,
  WebhookSignatureError,
  WebhookSignatureMismatchError,
} from '../../lib/webhooks/payment-webhook.errors.js';
import { computeWebhookSignature, createWebhookSignatureHeader, verifyWebhookSignature } from '../../lib/webhooks/webhook-signature.js';

// Fixed seed: the same cases every run (a failure prints its counterexample and path).
const RUNS = { seed: 6_2024, numRuns: 2_000 };
const NOW_MS = 1_760_000_000_000;
const NOW_S = NOW_MS / 1000;

/** The only errors verifyWebhookSignature may throw for any input it is given. */
function isNamedError(error: unknown): boolean {
  return error instanceof WebhookSignatureError || error instanceof WebhookSecretNotConfiguredError;
}

function outcome(run: () => unknown): 'ok' | 'named' | unknown {
  try {
    run();
    return 'ok';
  } catch (error) {
    return isNamedError(error) ? 'named' : error;
  }
}

const body = fc.oneof(fc.uint8Array({ maxLength: 4096 }).map((a) => Buffer.from(a)), fc.string({ maxLength: 2048 }));
/** Blank secrets are never keys (verifyWebhookSignature skips them), so the properties draw usable ones. */
const secret = fc.string({ minLength: 1, maxLength: 64 }).filter((value) => /\S/.test(value));
const hexDigest = fc.stringMatching(/^[0-9a-f]{64}$/);
/** Header-like strings: pieces of the real grammar glued with noise, to get past the first checks. */
const headerish = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc
    .array(
      fc.oneof(
        fc.constant('t=').chain((k) => fc.oneof(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.string({ maxLength: 14 })).map((v) => `${k}${v}`)),
        hexDigest.map((h) => `v1=${h}`),
        fc.string({ maxLength: 80 }).map((h) => `v1=${h}`),
        fc.string({ maxLength: 10 }).map((k) => `${k}=x`),
        fc.constantFrom('', ' ', '=', ',', 'v0=abc', 'v2=' + 'a'.repeat(64)),
      ),
      { maxLength: 12 },
    )
    .map((parts) => parts.join(',')),
);

describe('verifyWebhookSignature under fuzzing (fast-check)', () => {
  it('never throws anything but its named errors, whatever the body, header and secrets', () => {
    fc.assert(
      fc.property(body, fc.option(headerish, { nil: undefined }), fc.array(fc.string({ maxLength: 40 }), { maxLength: 3 }), (raw, header, secrets) => {
        const result = outcome(() => verifyWebhookSignature(raw, header, secrets, { now: NOW_MS }));
        expect(result === 'ok' || result === 'named').toBe(true);
      }),
      RUNS,
    );
  });

  it('accepts every genuine signature inside the tolerance, with any of several secrets', () => {
    fc.assert(
      fc.property(
        body,
        fc.array(secret, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.integer({ min: -300, max: 300 }),
        (raw, secrets, pick, skew) => {
          const index = pick % secrets.length;
          const t = NOW_S + skew;
          const header = createWebhookSignatureHeader(raw, secrets[index]!, t);
          const verified = verifyWebhookSignature(raw, header, secrets, { now: NOW_MS });
          expect(verified.timestamp).toBe(t);
          // a secret equal to an earlier one matches there first
          expect(secrets[verified.secretIndex]).toBe(secrets[index]);
        },
      ),
      RUNS,
    );
  });

  it('rejects a genuine request after any single-byte change of the body', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 2048 }).map((a) => Buffer.from(a)),
        secret,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (raw, key, position, delta) => {
          const header = createWebhookSignatureHeader(raw, key, NOW_S);
          const changed = Buffer.from(raw);
          const at = position % changed.length;
          changed[at] = (changed[at]! + delta) % 256;
          expect(() => verifyWebhookSignature(changed, header, key, { now: NOW_MS })).toThrow(WebhookSignatureMismatchError);
        },
      ),
      RUNS,
    );
  });

  it('rejects a genuine request after any single-character change of the header', () => {
    fc.assert(
      fc.property(body, secret, fc.nat(), fc.integer({ min: 1, max: 0x7e }), (raw, key, position, replacement) => {
        const header = `t=${NOW_S},v1=${computeWebhookSignature(raw, key, NOW_S)}`;
        const at = position % header.length;
        const char = String.fromCharCode(replacement);
        fc.pre(char !== header[at]);
        const changed = header.slice(0, at) + char + header.slice(at + 1);
        // hex is case-insensitive for Buffer.from: an upper-cased digit is the same digest
        fc.pre(changed.toLowerCase() !== header);
        // a changed separator can leave an equivalent header (`t=1 ,v1=…` trims to the same)
        fc.pre(changed.replace(/\s/g, '') !== header);
        const result = outcome(() => verifyWebhookSignature(raw, changed, key, { now: NOW_MS }));
        expect(result).toBe('named');
      }),
      RUNS,
    );
  });

  it('rejects signatures made with another secret', () => {
    fc.assert(
      fc.property(body, secret, secret, (raw, real, other) => {
        fc.pre(real !== other);
        const header = createWebhookSignatureHeader(raw, other, NOW_S);
        expect(() => verifyWebhookSignature(raw, header, real, { now: NOW_MS })).toThrow(WebhookSignatureMismatchError);
      }),
      RUNS,
    );
  });
});
