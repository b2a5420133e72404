import { createHmac } from 'node:crypto';
import {
  computeWebhookSignature,
  createWebhookSignatureHeader,
  parseWebhookSignatureHeader,
  verifyWebhookSignature,
} from '../../lib/webhooks/webhook-signature.js';
import {
  PaymentWebhookError,
  WebhookSecretNotConfiguredError,
  WebhookSignatureError,
  WebhookSignatureMalformedError,
  WebhookSignatureMismatchError,
  WebhookSignatureMissingError,
  WebhookTimestampOutOfToleranceError,
} from '../../lib/webhooks/payment-webhook.errors.js';

const SECRET = 'whsec_test_primary';
const OTHER = 'whsec_test_other';
const T = 1_800_000_000;
const NOW = T * 1000;
const BODY = Buffer.from('{"eventId":"evt_1","eventType":"payment.succeeded","data":{"amount":"10.00000000"}}');

function reference(body: Buffer | string, secret: string, t: number | string): string {
  return createHmac('sha256', secret).update(`${t}.${body.toString()}`).digest('hex');
}

function expectCode(fn: () => unknown, type: new (...args: never[]) => Error, code: string, status: number): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(type);
  expect(caught).toBeInstanceOf(PaymentWebhookError);
  expect((caught as PaymentWebhookError).code).toBe(code);
  expect((caught as PaymentWebhookError).httpStatus).toBe(status);
}

describe('computeWebhookSignature', () => {
  it('is the hex HMAC-SHA256 of "<t>.<raw body>" (spec 6.3)', () => {
    expect(computeWebhookSignature(BODY, SECRET, T)).toBe(reference(BODY, SECRET, T));
    expect(computeWebhookSignature(BODY.toString(), SECRET, String(T))).toBe(reference(BODY, SECRET, T));
  });

  it('builds the header value', () => {
    expect(createWebhookSignatureHeader(BODY, SECRET, T)).toBe(`t=${T},v1=${reference(BODY, SECRET, T)}`);
  });

  it('signs bytes as they are: non-UTF-8 bytes and whitespace change the digest', () => {
    const raw = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    const header = createWebhookSignatureHeader(raw, SECRET, T);
    expect(verifyWebhookSignature(raw, header, SECRET, { now: NOW })).toEqual({ timestamp: T, secretIndex: 0 });
    const reserialised = Buffer.from(JSON.stringify(JSON.parse('{ "a": 1 }')));
    const original = Buffer.from('{ "a": 1 }');
    expect(() =>
      verifyWebhookSignature(reserialised, createWebhookSignatureHeader(original, SECRET, T), SECRET, { now: NOW }),
    ).toThrow(WebhookSignatureMismatchError);
  });
});

describe('verifyWebhookSignature', () => {
  const header = `t=${T},v1=${reference(BODY, SECRET, T)}`;

  it('accepts a valid signature over a Buffer or a string body', () => {
    expect(verifyWebhookSignature(BODY, header, SECRET, { now: NOW })).toEqual({ timestamp: T, secretIndex: 0 });
    expect(verifyWebhookSignature(BODY.toString(), header, [SECRET], { now: NOW }).secretIndex).toBe(0);
  });

  it('accepts any of several v1 entries and tolerates spaces and unknown schemes', () => {
    const wrong = 'a'.repeat(64);
    const h = ` t=${T} , v0=zz, v1=${wrong},v1=${reference(BODY, SECRET, T)} `;
    expect(verifyWebhookSignature(BODY, h, SECRET, { now: NOW }).timestamp).toBe(T);
  });

  it('accepts upper-case hex', () => {
    const h = `t=${T},v1=${reference(BODY, SECRET, T).toUpperCase()}`;
    expect(verifyWebhookSignature(BODY, h, SECRET, { now: NOW }).secretIndex).toBe(0);
  });

  it('supports rotation: any configured secret may match, and says which', () => {
    const signedWithOther = createWebhookSignatureHeader(BODY, OTHER, T);
    expect(verifyWebhookSignature(BODY, signedWithOther, [SECRET, OTHER], { now: NOW }).secretIndex).toBe(1);
    expect(verifyWebhookSignature(BODY, header, [SECRET, OTHER], { now: NOW }).secretIndex).toBe(0);
  });

  it('rejects a wrong secret or a tampered body with WEBHOOK_SIGNATURE_MISMATCH (401)', () => {
    expectCode(() => verifyWebhookSignature(BODY, header, OTHER, { now: NOW }), WebhookSignatureMismatchError, 'WEBHOOK_SIGNATURE_MISMATCH', 401);
    const tampered = Buffer.from(BODY.toString().replace('10.00000000', '99.00000000'));
    expectCode(() => verifyWebhookSignature(tampered, header, SECRET, { now: NOW }), WebhookSignatureMismatchError, 'WEBHOOK_SIGNATURE_MISMATCH', 401);
    // the digest covers the timestamp too
    const movedT = header.replace(`t=${T}`, `t=${T + 1}`);
    expectCode(() => verifyWebhookSignature(BODY, movedT, SECRET, { now: NOW }), WebhookSignatureMismatchError, 'WEBHOOK_SIGNATURE_MISMATCH', 401);
  });

  it('enforces the replay window both ways, inclusive at the bound', () => {
    expect(verifyWebhookSignature(BODY, header, SECRET, { now: NOW + 300_000 }).timestamp).toBe(T);
    expect(verifyWebhookSignature(BODY, header, SECRET, { now: NOW - 300_000 }).timestamp).toBe(T);
    expectCode(
      () => verifyWebhookSignature(BODY, header, SECRET, { now: NOW + 301_000 }),
      WebhookTimestampOutOfToleranceError,
      'WEBHOOK_TIMESTAMP_OUT_OF_TOLERANCE',
      401,
    );
    expectCode(
      () => verifyWebhookSignature(BODY, header, SECRET, { now: NOW - 301_000 }),
      WebhookTimestampOutOfToleranceError,
      'WEBHOOK_TIMESTAMP_OUT_OF_TOLERANCE',
      401,
    );
    expect(verifyWebhookSignature(BODY, header, SECRET, { now: NOW + 3_600_000, toleranceSeconds: 3600 }).timestamp).toBe(T);
  });

  it('rejects instead of passing when the clock is not a number', () => {
    expect(() => verifyWebhookSignature(BODY, header, SECRET, { now: Number.NaN })).toThrow(WebhookTimestampOutOfToleranceError);
  });

  it('reports a forged old request as a mismatch, not as out of tolerance', () => {
    const h = `t=${T - 10_000},v1=${'b'.repeat(64)}`;
    expect(() => verifyWebhookSignature(BODY, h, SECRET, { now: NOW })).toThrow(WebhookSignatureMismatchError);
  });

  it('reports a missing header with WEBHOOK_SIGNATURE_MISSING (400)', () => {
    expectCode(() => verifyWebhookSignature(BODY, undefined, SECRET), WebhookSignatureMissingError, 'WEBHOOK_SIGNATURE_MISSING', 400);
    expectCode(() => verifyWebhookSignature(BODY, '', SECRET), WebhookSignatureMissingError, 'WEBHOOK_SIGNATURE_MISSING', 400);
  });

  it.each([
    ['no t', `v1=${'a'.repeat(64)}`],
    ['no v1', `t=${T}`],
    ['two t', `t=${T},t=${T},v1=${'a'.repeat(64)}`],
    ['non-integer t', `t=${T}.5,v1=${'a'.repeat(64)}`],
    ['negative t', `t=-${T},v1=${'a'.repeat(64)}`],
    ['huge t', `t=${'9'.repeat(40)},v1=${'a'.repeat(64)}`],
    ['empty t', `t=,v1=${'a'.repeat(64)}`],
    ['hex t', `t=0x10,v1=${'a'.repeat(64)}`],
    ['short v1', `t=${T},v1=${'a'.repeat(63)}`],
    ['long v1', `t=${T},v1=${'a'.repeat(66)}`],
    ['non-hex v1', `t=${T},v1=${'g'.repeat(64)}`],
    ['non-hex v1 at the end', `t=${T},v1=${'a'.repeat(63)}z`],
    ['no equals sign', `t${T},v1=${'a'.repeat(64)}`],
    ['random text', 'hello world'],
    ['too many v1', `t=${T},${Array.from({ length: 9 }, () => `v1=${'a'.repeat(64)}`).join(',')}`],
    ['very long header', `t=${T},v1=${'a'.repeat(64)},${'x'.repeat(5000)}`],
  ])('rejects a malformed header (%s) with WEBHOOK_SIGNATURE_MALFORMED (400)', (_label, h) => {
    expectCode(() => verifyWebhookSignature(BODY, h, SECRET, { now: NOW }), WebhookSignatureMalformedError, 'WEBHOOK_SIGNATURE_MALFORMED', 400);
  });

  it('takes a header given as an array (one entry passes; a header sent twice is malformed)', () => {
    expect(verifyWebhookSignature(BODY, [header], SECRET, { now: NOW }).timestamp).toBe(T);
    expect(() => verifyWebhookSignature(BODY, [header, header], SECRET, { now: NOW })).toThrow(WebhookSignatureMalformedError);
    expect(() => verifyWebhookSignature(BODY, [], SECRET, { now: NOW })).toThrow(WebhookSignatureMissingError);
  });

  it('refuses to verify without a usable secret', () => {
    expect(() => verifyWebhookSignature(BODY, header, [])).toThrow(WebhookSecretNotConfiguredError);
    expect(() => verifyWebhookSignature(BODY, header, '')).toThrow(WebhookSecretNotConfiguredError);
    expect(() => verifyWebhookSignature(BODY, header, ['  '])).toThrow(WebhookSecretNotConfiguredError);
    // called outside Nest: no module variable to set, the list given is the fault
    expect(() => verifyWebhookSignature(BODY, header, [])).toThrow('No webhook secret to verify with: the secrets given are none or blank');
    expect(() => verifyWebhookSignature(BODY, header, ['', ' \t', undefined as unknown as string])).toThrow(
      WebhookSecretNotConfiguredError,
    );
  });

  it('never uses a blank secret as a key: one signed with whitespace is a mismatch', () => {
    const blankSigned = createWebhookSignatureHeader(BODY, '  ', T);
    expect(() => verifyWebhookSignature(BODY, blankSigned, ['  ', SECRET], { now: NOW })).toThrow(WebhookSignatureMismatchError);
  });

  it('skips a missing or blank entry beside a usable secret (a rotation whose old secret is unset), keeping indexes', () => {
    const unset = undefined as unknown as string;
    expect(verifyWebhookSignature(BODY, header, [SECRET, unset], { now: NOW })).toEqual({ timestamp: T, secretIndex: 0 });
    expect(verifyWebhookSignature(BODY, header, ['', ' ', SECRET], { now: NOW })).toEqual({ timestamp: T, secretIndex: 2 });
    expect(() => verifyWebhookSignature(BODY, header, [OTHER, unset], { now: NOW })).toThrow(WebhookSignatureMismatchError);
  });

  it('every failure is a WebhookSignatureError whose message and JSON carry no secret or digest', () => {
    const digest = reference(BODY, SECRET, T);
    for (const h of [undefined, 'garbage', `t=${T},v1=${'c'.repeat(64)}`, header]) {
      try {
        verifyWebhookSignature(BODY, h, [OTHER], { now: NOW + 10_000_000 });
        throw new Error('expected a failure');
      } catch (error) {
        expect(error).toBeInstanceOf(WebhookSignatureError);
        const text = `${(error as Error).message} ${JSON.stringify(error)} ${(error as Error).stack}`;
        expect(text).not.toContain(OTHER);
        expect(text).not.toContain(digest);
      }
    }
  });
});

describe('parseWebhookSignatureHeader', () => {
  it('keeps t as sent and decodes every v1', () => {
    const parsed = parseWebhookSignatureHeader(`t=0${T},v1=${'a'.repeat(64)},v1=${'b'.repeat(64)}`);
    expect(parsed.timestampText).toBe(`0${T}`);
    expect(parsed.timestamp).toBe(T);
    expect(parsed.signatures).toHaveLength(2);
    expect(parsed.signatures[0]).toEqual(Buffer.alloc(32, 0xaa));
  });

  it('parses the canonical form and any padded form of it alike (fast path = general parser)', () => {
    for (const digest of ['a'.repeat(64), 'F0'.repeat(32), computeWebhookSignature(BODY, SECRET, T)]) {
      for (const t of ['0', `${T}`, '9'.repeat(12)]) {
        const canonical = parseWebhookSignatureHeader(`t=${t},v1=${digest}`);
        expect(canonical).toEqual(parseWebhookSignatureHeader(` t=${t} , v1=${digest} `));
        expect(canonical.timestampText).toBe(t);
        expect(canonical.signatures).toEqual([Buffer.from(digest, 'hex')]);
      }
    }
    expect(() => parseWebhookSignatureHeader(`t=${'9'.repeat(13)},v1=${'a'.repeat(64)}`)).toThrow(WebhookSignatureMalformedError);
    expect(() => parseWebhookSignatureHeader(`t=${T},v2=${'a'.repeat(64)}`)).toThrow(WebhookSignatureMalformedError);
  });

  it('gives the reference digest for many distinct secrets, UTF-8 ones included (secrets used in turn)', () => {
    for (let i = 0; i < 80; i++) {
      const secret = `whsec_${i}_${'é€'.repeat(i % 3)}`;
      expect(computeWebhookSignature(BODY, secret, T)).toBe(reference(BODY, secret, T));
      expect(verifyWebhookSignature(BODY, createWebhookSignatureHeader(BODY, secret, T), [OTHER, secret], { now: NOW }).secretIndex).toBe(1);
    }
  });
});
