import { createHmac, createSecretKey, type Hmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { PAYMENT_OPTION_DEFAULTS } from '../config/payment-options.defaults.js';
import {
  WebhookSecretNotConfiguredError,
  WebhookSignatureMalformedError,
  WebhookSignatureMismatchError,
  WebhookSignatureMissingError,
  WebhookTimestampOutOfToleranceError,
} from './payment-webhook.errors.js';

/** Header carrying the signature. Node lower-cases incoming header names. @publicApi */
export const WEBHOOK_SIGNATURE_HEADER = 'x-service-signature';

/** Replay window: receivers refuse a signature more than 300 s from their clock. */
const DEFAULT_WEBHOOK_TOLERANCE_SECONDS: number = PAYMENT_OPTION_DEFAULTS.webhookToleranceSeconds;

/** Longest header accepted; a real one is ~80 characters per digest. Bounds the parsing work. */
const MAX_HEADER_LENGTH = 4096;
/** Most `v1=` entries looked at; more than this is not a rotation, it is abuse. */
const MAX_SIGNATURES = 8;
/** `t` has at most 12 digits (year 33658); longer is garbage and could overflow. */
const MAX_TIMESTAMP_DIGITS = 12;
const DIGEST_BYTES = 32;
const DIGEST_HEX_LENGTH = DIGEST_BYTES * 2;

/** Shared default, so a call without options allocates nothing. */
const NO_OPTIONS: VerifyWebhookSignatureOptions = Object.freeze({});

/** @publicApi */
export interface VerifyWebhookSignatureOptions {
  /** Largest accepted `|now - t|`, in seconds. @default 300 */
  toleranceSeconds?: number;
  /** Current time in milliseconds (inject a clock in tests). @default Date.now() */
  now?: number;
}

/** What a successful verification learned. @publicApi */
export interface WebhookSignatureVerification {
  /** `t` of the header, unix seconds. */
  timestamp: number;
  /** Index (in the `secrets` given) of the secret that matched; useful to watch a rotation. */
  secretIndex: number;
}

/** The parts of a well-formed header. */
export interface ParsedWebhookSignatureHeader {
  /** `t` exactly as sent: the signed string starts with it. */
  timestampText: string;
  timestamp: number;
  /** Decoded `v1` digests (32 bytes each). */
  signatures: Buffer[];
}

/**
 * Hex HMAC-SHA256 of `<timestamp>.<rawBody>` keyed with `secret`, as the service signs.
 * `rawBody` must be the exact bytes sent or received, never re-serialised JSON.
 * @publicApi
 */
export function computeWebhookSignature(rawBody: Buffer | string, secret: string, timestamp: number | string): string {
  return hmac(rawBody, secret, String(timestamp)).digest('hex');
}

/** `t=<timestamp>,v1=<digest>` for `rawBody`: the value of `X-Service-Signature`. `timestamp` defaults to now. @publicApi */
export function createWebhookSignatureHeader(
  rawBody: Buffer | string,
  secret: string,
  timestamp: number = Math.floor(Date.now() / 1000),
): string {
  // whole seconds, as the service sends: `Date.now() / 1000` gives `t=1795705161.17`, and
  // `Date.now()` (milliseconds) a time 50,000 years away; both would only fail later, at a verifier
  if (!Number.isSafeInteger(timestamp) || timestamp < 0 || timestamp > MAX_SIGNATURE_SECONDS) {
    throw new RangeError(`The signature timestamp must be whole Unix seconds (e.g. Math.floor(Date.now() / 1000)), not ${timestamp}`);
  }
  return `t=${timestamp},v1=${computeWebhookSignature(rawBody, secret, timestamp)}`;
}

/** Year 5138 in Unix seconds: a larger `t` is milliseconds by mistake. */
const MAX_SIGNATURE_SECONDS = 99_999_999_999;

function hmac(rawBody: Buffer | string, secret: string, timestampText: string): Hmac {
  // The body is hashed as received, never copied into a concatenation.
  return createHmac('sha256', secretKeyOf(secret)).update(`${timestampText}.`).update(rawBody);
}

/** Most secrets whose key is kept; a caller cycling through more only refills the cache. */
const MAX_CACHED_SECRET_KEYS = 32;
/**
 * The key of each secret seen: a string key is encoded into a new key on every `createHmac`,
 * a few per cent of a 2 KiB verification. A `KeyObject` never prints its bytes.
 */
const secretKeys = new Map<string, KeyObject>();

function secretKeyOf(secret: string): KeyObject {
  let key = secretKeys.get(secret);
  if (key === undefined) {
    if (secretKeys.size === MAX_CACHED_SECRET_KEYS) secretKeys.clear();
    key = createSecretKey(secret, 'utf8');
    secretKeys.set(secret, key);
  }
  return key;
}

/** Where verification writes each expected digest; verification is synchronous, so one suffices. */
const expectedDigest = Buffer.alloc(DIGEST_BYTES);

/**
 * The digest written into `expectedDigest`. `digest()` would return a Buffer with its own
 * backing store, which costs more CPU and GC than the hash itself on small bodies; the
 * latin1 ('binary') string maps each byte to one char and back exactly.
 */
function expectedDigestOf(rawBody: Buffer | string, secret: string, timestampText: string): Buffer {
  expectedDigest.write(hmac(rawBody, secret, timestampText).digest('binary'), 0, DIGEST_BYTES, 'latin1');
  return expectedDigest;
}

/**
 * Parses `t=<unix>,v1=<hex>[,v1=<hex>...]`. Unknown schemes (`v0=`, `v2=`) are ignored so
 * the sender can add one later. Linear scan of its parts, no pattern over the whole header.
 */
export function parseWebhookSignatureHeader(header: string | readonly string[] | undefined): ParsedWebhookSignatureHeader {
  // A header sent twice arrives as an array in some stacks; joined, two `t` make it malformed.
  if (Array.isArray(header)) header = header.join(',');
  if (typeof header !== 'string' || header.length === 0) {
    throw new WebhookSignatureMissingError();
  }
  if (header.length > MAX_HEADER_LENGTH) {
    throw new WebhookSignatureMalformedError('too long');
  }
  let timestampText: string | undefined;
  const signatures: Buffer[] = [];
  let start = 0;
  while (start <= header.length) {
    let end = header.indexOf(',', start);
    if (end === -1) end = header.length;
    const part = header.slice(start, end).trim();
    start = end + 1;
    if (part.length === 0) continue;
    const eq = part.indexOf('=');
    if (eq <= 0) {
      throw new WebhookSignatureMalformedError('expected key=value pairs');
    }
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === 't') {
      if (timestampText !== undefined) {
        throw new WebhookSignatureMalformedError('more than one t');
      }
      if (!isDigits(value, MAX_TIMESTAMP_DIGITS)) {
        throw new WebhookSignatureMalformedError('t must be a unix timestamp in seconds');
      }
      timestampText = value;
    } else if (key === 'v1') {
      if (signatures.length === MAX_SIGNATURES) {
        throw new WebhookSignatureMalformedError('too many v1 signatures');
      }
      const digest = value.length === DIGEST_HEX_LENGTH ? Buffer.from(value, 'hex') : undefined;
      // Buffer.from stops at the first non-hex character, so a short result means bad hex.
      if (digest === undefined || digest.length !== DIGEST_BYTES) {
        throw new WebhookSignatureMalformedError('v1 must be 64 hexadecimal characters');
      }
      signatures.push(digest);
    }
  }
  if (timestampText === undefined) {
    throw new WebhookSignatureMalformedError('t is missing');
  }
  if (signatures.length === 0) {
    throw new WebhookSignatureMalformedError('v1 is missing');
  }
  return { timestampText, timestamp: Number(timestampText), signatures };
}

/** Where the canonical path decodes the header's `v1`; verification is synchronous, so one suffices. */
const headerDigest = Buffer.alloc(DIGEST_BYTES);
/** The canonical header's signatures: `headerDigest` alone, without an array per delivery. */
const CANONICAL_SIGNATURES: readonly Buffer[] = [headerDigest];

/**
 * The `t` of `header` when it is exactly `t=<1-12 digits>,v1=<64 hex digits>` (the form the
 * service sends), with its `v1` decoded into `headerDigest`, else `undefined`: anything else
 * goes through the general parser and gets its precise error. Hex decoding stops at the first
 * character that is not a hex digit (either case), so 32 bytes written means 64 hex digits.
 */
function canonicalHeaderTimestamp(header: string): string | undefined {
  const comma = header.indexOf(',');
  if (
    comma < 3 ||
    comma > 2 + MAX_TIMESTAMP_DIGITS ||
    header.length !== comma + 4 + DIGEST_HEX_LENGTH ||
    !header.startsWith('t=') ||
    !header.startsWith('v1=', comma + 1)
  ) {
    return undefined;
  }
  const timestampText = header.slice(2, comma);
  if (!isDigits(timestampText, MAX_TIMESTAMP_DIGITS)) return undefined;
  return headerDigest.write(header.slice(comma + 4), 0, DIGEST_BYTES, 'hex') === DIGEST_BYTES ? timestampText : undefined;
}

/** Refuses a genuine signature whose `t` is further from now than the tolerance (a replay, or a skewed clock). */
function assertWithinTolerance(timestamp: number, toleranceSeconds: number, options: VerifyWebhookSignatureOptions): void {
  const nowSeconds = (options.now ?? Date.now()) / 1000;
  // Written as "not within" so a NaN clock rejects instead of passing.
  if (!(Math.abs(nowSeconds - timestamp) <= toleranceSeconds)) {
    throw new WebhookTimestampOutOfToleranceError(timestamp, toleranceSeconds);
  }
}

const DIGITS = /^[0-9]+$/;

/**
 * A pattern, not a `charCodeAt` loop: such loops lose V8's fast path for good once any loaded
 * package subclasses `String` (ioredis 6 does), and a host using ioredis paid a third more per
 * verification. The canonical path decodes hex with `Buffer.write` for the same reason.
 */
function isDigits(value: string, maxLength: number): boolean {
  return value.length <= maxLength && DIGITS.test(value);
}

const NOT_BLANK = /\S/;

/**
 * A missing or blank entry (`process.env.OLD_SECRET` unset after a rotation) is never a key:
 * anyone could sign with it. It is skipped; only a list without any other is a caller's mistake.
 */
function isUsableSecret(secret: unknown): secret is string {
  return typeof secret === 'string' && NOT_BLANK.test(secret);
}

/**
 * The index of the first (usable) secret whose digest of `<t>.<body>` equals one of `signatures`, or -1.
 * Every secret and every signature is compared (no early exit), so timing says nothing about
 * which one matched.
 */
function matchingSecretIndex(
  rawBody: Buffer | string,
  secrets: string | readonly string[],
  count: number,
  timestampText: string,
  signatures: readonly Buffer[],
): number {
  let secretIndex = -1;
  for (let i = 0; i < count; i++) {
    const secret = typeof secrets === 'string' ? secrets : secrets[i];
    if (!isUsableSecret(secret)) continue;
    const expected = expectedDigestOf(rawBody, secret, timestampText);
    for (let j = 0; j < signatures.length; j++) {
      if (timingSafeEqual(expected, signatures[j]!) && secretIndex === -1) {
        secretIndex = i;
      }
    }
  }
  expectedDigest.fill(0);
  return secretIndex;
}

/**
 * Verifies `X-Service-Signature` over the raw body (HMAC-SHA256 of `<t>.<raw body>`, hex,
 * compared in constant time; `t` within the tolerance), usable outside Nest. Any `v1` matching any secret passes (several secrets = rotation). Throws a
 * `WebhookSignatureError` subclass (`code`, `httpStatus`) when the request fails the check;
 * a `PaymentWebhookError` (`WEBHOOK_SECRET_NOT_CONFIGURED`) when no usable secret is given (missing or blank entries are skipped, never used as keys), and a `TypeError` for a
 * tolerance that is not a number of seconds, 0 or more: mistakes of the caller, not of the request.
 *
 * The digest is checked before the timestamp, so a forged request is reported as a
 * mismatch and only a genuine but old one as out of tolerance.
 * @publicApi
 */
export function verifyWebhookSignature(
  rawBody: Buffer | string,
  header: string | readonly string[] | undefined,
  secrets: string | readonly string[],
  options: VerifyWebhookSignatureOptions = NO_OPTIONS,
): WebhookSignatureVerification {
  // Hot path: no `[secrets]` array, no closures; a single string is secret 0.
  const secretList = typeof secrets === 'string' ? undefined : secrets;
  const count = secretList === undefined ? 1 : secretList.length;
  // one usable secret is enough to go on (the match skips the others): the first, as a rule
  let usable = false;
  for (let i = 0; i < count && !usable; i++) usable = isUsableSecret(secretList === undefined ? secrets : secretList[i]);
  if (!usable) {
    // the module's callers name the account's variable instead; a caller outside Nest passed this list itself
    throw new WebhookSecretNotConfiguredError(undefined, 'No webhook secret to verify with: the secrets given are none or blank');
  }
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (!(toleranceSeconds >= 0)) {
    throw new TypeError('toleranceSeconds must be a number >= 0');
  }
  // The form the service sends is read without the general parser's parts and arrays.
  const canonicalTimestamp = typeof header === 'string' ? canonicalHeaderTimestamp(header) : undefined;
  let timestampText: string;
  let signatures: readonly Buffer[];
  if (canonicalTimestamp !== undefined) {
    timestampText = canonicalTimestamp;
    signatures = CANONICAL_SIGNATURES;
  } else {
    ({ timestampText, signatures } = parseWebhookSignatureHeader(header));
  }
  const secretIndex = matchingSecretIndex(rawBody, secretList ?? (secrets as string), count, timestampText, signatures);
  if (secretIndex === -1) {
    throw new WebhookSignatureMismatchError();
  }
  const timestamp = Number(timestampText);
  assertWithinTolerance(timestamp, toleranceSeconds, options);
  return { timestamp, secretIndex };
}
