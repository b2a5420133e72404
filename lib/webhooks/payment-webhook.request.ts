import type { IncomingHttpHeaders } from 'node:http';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { PAYMENT_WEBHOOK_REQUEST_STATE } from '../payment.constants.js';
import { WebhookBodyTooLargeError, WebhookRawBodyMissingError, WebhookUnsupportedMediaTypeError } from './payment-webhook.errors.js';

/**
 * What the webhook receiver needs from a request. Express and Fastify requests both fit:
 * Nest sets `rawBody` on either when the app is created with `{ rawBody: true }`; without it,
 * a `body` that is a buffer (a raw parser of the host's on the path) is taken as the bytes.
 * @publicApi
 */
export interface PaymentWebhookRequest {
  headers: IncomingHttpHeaders;
  rawBody?: Buffer;
  body?: unknown;
  [PAYMENT_WEBHOOK_REQUEST_STATE]?: PaymentWebhookRequestState;
}

/** What the guards and the idempotency interceptor record on the request, for the steps after them. */
export interface PaymentWebhookRequestState {
  /** The bytes the signature was verified over. */
  rawBody?: Buffer;
  event?: AnyPaymentEvent;
  /** The route (`Controller.method`) whose `PaymentWebhookIdempotencyInterceptor` holds the request's key. */
  claimedByInterceptor?: string;
  /** The subscription to that interceptor's answer: open while its run is awaited. */
  claimHolder?: { readonly closed: boolean };
}

export function getPaymentWebhookState(request: PaymentWebhookRequest): PaymentWebhookRequestState {
  return (request[PAYMENT_WEBHOOK_REQUEST_STATE] ??= {});
}

/**
 * The verified event of a request that passed `PaymentWebhookSignatureGuard` and
 * `PaymentWebhookEnvelopeGuard`, else `undefined`.
 * @publicApi
 */
export function getVerifiedPaymentWebhookEvent(request: PaymentWebhookRequest): AnyPaymentEvent | undefined {
  return request[PAYMENT_WEBHOOK_REQUEST_STATE]?.event;
}

/** First value of a header (Node joins most repeated headers, but some arrive as arrays). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

// The request checks below run before the body is looked at, in the order the receiver
// and the signature guard both use: content type (415), declared size (413), raw body.

/**
 * One parameter of a content type at `lastIndex`: `; name=token` or `; name="quoted \" string"`
 * (RFC 9110 8.3.1). Sticky, so each parameter is matched once where the last one ended.
 */
const PARAMETER = /[ \t]*;[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)=(?:([!#$%&'*+.^_`|~0-9A-Za-z-]+)|"((?:[^"\\]|\\.)*)")/y;

/** The index of the first character at or after `from` that is not HTTP whitespace (space, tab). */
function skipHttpWhitespace(text: string, from: number): number {
  let at = from;
  while (at < text.length && (text.charCodeAt(at) === 0x20 || text.charCodeAt(at) === 0x09)) at++;
  return at;
}

/**
 * `text` without leading and trailing HTTP whitespace. Scanned, not a regular expression: the
 * header comes from anyone, and `/[ \t]+$/` retries at every space of a long run (quadratic).
 */
function trimHttpWhitespace(text: string): string {
  let end = text.length;
  while (end > 0 && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--;
  return text.slice(skipHttpWhitespace(text, 0), end);
}

/**
 * The `charset` values among a content type's `parameters` (the text from its first `;`), read
 * as HTTP reads them (a `charset=` inside another parameter's quoted value is not one);
 * `undefined` when they do not parse. One pass over the text, whatever it holds.
 */
function charsetsOf(parameters: string): string[] | undefined {
  const charsets: string[] = [];
  let at = 0;
  for (;;) {
    const next = skipHttpWhitespace(parameters, at);
    if (next === parameters.length) break;
    // a trailing ';' names nothing
    if (parameters.charCodeAt(next) === 0x3b && skipHttpWhitespace(parameters, next + 1) === parameters.length) break;
    PARAMETER.lastIndex = next;
    const parameter = PARAMETER.exec(parameters);
    if (parameter === null) return undefined;
    if (parameter[1]!.toLowerCase() === 'charset') charsets.push((parameter[2] ?? parameter[3]!.replace(/\\(.)/g, '$1')).toLowerCase());
    at = PARAMETER.lastIndex;
  }
  return charsets;
}

/**
 * The service sends JSON; anything else is refused before the body is read. A charset other
 * than UTF-8 is refused too (JSON between systems is UTF-8, RFC 8259), as Express's JSON
 * parser refuses it before the route: the same 415 on every adapter and mount. So is a header
 * whose parameters do not parse, or that names two charsets: a body parser that read another
 * charset than this check would hand the handler values the signature never covered.
 */
export function assertJsonContentType(headers: IncomingHttpHeaders): void {
  const type = headerValue(headers, 'content-type');
  // What the service sends, checked without allocating; any other spelling is normalised.
  if (type === 'application/json') return;
  const semicolon = type === undefined ? -1 : type.indexOf(';');
  // HTTP's whitespace only (space, tab), as Express's parser trims it: a no-break space that
  // `trim()` removes would pass here while that parser skips the body as not JSON
  const mediaType = type === undefined ? '' : trimHttpWhitespace(semicolon === -1 ? type : type.slice(0, semicolon)).toLowerCase();
  if (mediaType !== 'application/json') {
    throw new WebhookUnsupportedMediaTypeError();
  }
  const charsets = semicolon === -1 ? [] : charsetsOf(type!.slice(semicolon));
  if (charsets === undefined || charsets.length > 1 || (charsets.length === 1 && charsets[0] !== 'utf-8')) {
    throw new WebhookUnsupportedMediaTypeError(true);
  }
}

/** Refuses a body whose declared `Content-Length` is over the limit, before hashing it. */
export function assertDeclaredSize(headers: IncomingHttpHeaders, maxBytes: number): void {
  const declared = headers['content-length'];
  if (declared === undefined) return;
  const length = Number(declared);
  if (Number.isFinite(length) && length > maxBytes) {
    throw new WebhookBodyTooLargeError(maxBytes);
  }
}

/**
 * Logs the fix for a missing raw body once per owner: loud enough to notice, not once per
 * delivery. The module's verifier and the signature guard each hold one.
 */
export function rawBodyMissingReporter(logger: { error(message: string): unknown }): () => void {
  let logged = false;
  return () => {
    if (logged) return;
    logged = true;
    logger.error(new WebhookRawBodyMissingError().message);
  };
}

/**
 * The bytes as received: Nest's `rawBody` (the app created with `rawBody: true`), or a body
 * that is itself a buffer (a raw parser of the host's on the path: `express.raw()`, a Fastify
 * content-type parser with `parseAs: 'buffer'`). `undefined` means nobody kept them (another
 * JSON parser ran first). A request without a body has nothing to keep, so it gets an empty
 * buffer and fails verification normally.
 */
export function rawBodyOf(request: PaymentWebhookRequest): Buffer | undefined {
  if (Buffer.isBuffer(request.rawBody)) return request.rawBody;
  if (Buffer.isBuffer(request.body)) return request.body;
  const length = headerValue(request.headers, 'content-length');
  const chunked = headerValue(request.headers, 'transfer-encoding') !== undefined;
  if (!chunked && (length === undefined || length.trim() === '0')) return Buffer.alloc(0);
  return undefined;
}

/**
 * The raw body a verification may use: the bytes kept (`rawBody`, from `rawBodyOf` or a guard's
 * own source) within `maxBytes`. `onMissing` runs before the refusal when nobody kept them.
 * @throws WebhookRawBodyMissingError, WebhookBodyTooLargeError
 */
export function boundedRawBody(rawBody: Buffer | undefined, maxBytes: number, onMissing: () => void): Buffer {
  if (rawBody === undefined) {
    onMissing();
    throw new WebhookRawBodyMissingError();
  }
  if (rawBody.length > maxBytes) throw new WebhookBodyTooLargeError(maxBytes);
  return rawBody;
}
