import { isRecord } from '../common/is-record.util.js';
import {
  isNamedPaymentErrorCode,
  MAX_FIELD_ERRORS,
  MAX_MESSAGES_PER_FIELD,
  PaymentApiError,
  type PaymentApiErrorDetails,
  PaymentAuthenticationError,
  PaymentClientErrorCode,
  PaymentErrorCode,
  PaymentInvalidStateError,
  PaymentNotFoundError,
  PaymentPayoutError,
  PaymentProviderError,
  PaymentRateLimitError,
  PaymentServerError,
  PaymentValidationError,
} from './payment-api.errors.js';

// An answer of the service that is not a success (a 4xx or 5xx, a redirect, a 2xx carrying the error
// envelope), read into the error of its code's family (payment-api.errors.ts).

type PaymentApiErrorClass = new (details: PaymentApiErrorDetails) => PaymentApiError;

const CLASS_BY_CODE: Record<string, PaymentApiErrorClass> = {
  PAY_1001: PaymentAuthenticationError,
  PAY_1002: PaymentAuthenticationError,
  PAY_1003: PaymentAuthenticationError,
  PAY_1004: PaymentAuthenticationError,
  PAY_1005: PaymentAuthenticationError,
  PAY_2003: PaymentAuthenticationError,
  PAY_6001: PaymentAuthenticationError,
  PAY_2001: PaymentNotFoundError,
  PAY_2005: PaymentNotFoundError,
  PAY_3002: PaymentNotFoundError,
  PAY_2002: PaymentInvalidStateError,
  PAY_2004: PaymentInvalidStateError,
  PAY_2006: PaymentInvalidStateError,
  PAY_3001: PaymentPayoutError,
  PAY_4000: PaymentValidationError,
  PAY_5001: PaymentServerError,
  PAY_5002: PaymentServerError,
  PAY_5003: PaymentProviderError,
};

/** Error class for a service answer: by code first, then by HTTP status for codes the service does not list. */
function paymentErrorClassFor(code: string | undefined, httpStatus: number): PaymentApiErrorClass {
  if (httpStatus === 429) return PaymentRateLimitError;
  const byCode = code ? CLASS_BY_CODE[code] : undefined;
  if (byCode) return byCode;
  if (httpStatus === 401 || httpStatus === 403) return PaymentAuthenticationError;
  if (httpStatus === 404) return PaymentNotFoundError;
  if (httpStatus >= 500) return PaymentServerError;
  return PaymentApiError;
}

export interface ErrorResponseContext {
  httpStatus: number;
  body: unknown;
  retryAfterSeconds?: number;
  method: string;
  path: string;
  idempotencyKey?: string;
  account?: string;
  /** Strings that must never appear in the error (token, secrets). */
  redact?: (text: string) => string;
  /**
   * The token call's: its request carried the client secret, and an echo of it may be encoded past
   * any redaction (base64, hex), as an identifier too. Nothing of the answer's own text is kept
   * but plain words: no message, no field messages, a code the spec or the client names or of
   * `PLAIN_WORDS`, field names the request sent (`requestFields`) or of `PLAIN_WORDS`.
   */
  withholdText?: { requestFields: readonly string[] };
}

/** What a service error code looks like: a short identifier. */
const SERVICE_CODE = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/**
 * A code or field name the token call's error keeps although nothing names it: words of letters
 * of one case and `_` (`SERVICE_UNAVAILABLE`, `body`), at most 32 characters. An encoded echo of a
 * secret is not one: hex of text holds digits, and base64 of 16 characters or more (22 or more
 * of its 64 symbols) mixes cases or holds a digit, `+` or `/` for all but fewer than one secret in
 * a hundred million ((26/64)^22, twice).
 */
const PLAIN_WORDS = /^(?:[A-Z_]{1,32}|[a-z_]{1,32})$/;

/** Builds the typed error for an answer that is not a success from the service's error envelope (or whatever came back). */
export function paymentErrorFromResponse(ctx: ErrorResponseContext): PaymentApiError {
  const redact = ctx.redact ?? ((text: string) => text);
  const envelope = isRecord(ctx.body) ? ctx.body : undefined;
  // A code is an identifier (PAY_1001, RATE_LIMITED): anything else is not used as one. It
  // becomes a metric attribute and a log word, so it must never carry what the service echoed.
  const rawCode =
    typeof envelope?.code === 'string' &&
    SERVICE_CODE.test(envelope.code) &&
    redact(envelope.code) === envelope.code &&
    (ctx.withholdText === undefined || isNamedPaymentErrorCode(envelope.code) || PLAIN_WORDS.test(envelope.code))
      ? envelope.code
      : undefined;
  const code = rawCode ?? (ctx.httpStatus === 429 ? PaymentClientErrorCode.RATE_LIMITED : `HTTP_${ctx.httpStatus}`);
  const serviceMessage = ctx.withholdText
    ? 'the answer\'s message is not quoted (the request carried the client secret)'
    : typeof envelope?.message === 'string' ? envelope.message : undefined;
  // below 400 (an error body in a 2xx, a redirect the client does not follow) the service may have acted
  const outcomeUnknown = ctx.httpStatus < 400;
  const message = redact(
    `${ctx.method} ${ctx.path} failed with HTTP ${ctx.httpStatus} ${code}` +
      (serviceMessage ? `: ${serviceMessage}` : '') +
      (outcomeUnknown ? ' (an answer below 400 that is not a success: the service may have acted; check before sending it again)' : ''),
  );
  const ErrorClass = paymentErrorClassFor(rawCode, ctx.httpStatus);
  return new ErrorClass({
    code,
    message,
    httpStatus: ctx.httpStatus,
    errors: readFieldErrors(envelope?.errors, redact, ctx.withholdText?.requestFields),
    retryAfterSeconds: ctx.retryAfterSeconds,
    method: ctx.method,
    path: ctx.path,
    idempotencyKey: ctx.idempotencyKey,
    account: ctx.account,
    // a 5xx says nothing about what the service did before it failed (a refund may exist); nor
    // does PAY_5002, a 400 for "an unexpected error creating or updating a session" in the service's error list
    mayHaveReachedService: outcomeUnknown || ctx.httpStatus >= 500 || code === PaymentErrorCode.PAYMENT_CREATION_FAILED,
  });
}

/**
 * The answer's field errors, redacted; with `onlyNames`, those of these names or of plain words, without their messages.
 * The first `MAX_FIELD_ERRORS` fields with their first `MAX_MESSAGES_PER_FIELD` messages: each is
 * scrubbed of every secret synchronously, and an answer of a misbehaving server or proxy holding
 * hundreds of thousands of them (within the 10 MB body limit) would stall the process for minutes.
 */
function readFieldErrors(value: unknown, redact: (text: string) => string, onlyNames: readonly string[] | undefined): Record<string, string[]> {
  if (!isRecord(value)) return {};
  const fields: Array<[string, string[]]> = [];
  for (const field in value) {
    if (!Object.hasOwn(value, field) || (onlyNames !== undefined && !onlyNames.includes(field) && !PLAIN_WORDS.test(field))) continue;
    if (fields.length === MAX_FIELD_ERRORS) break;
    const messages = value[field];
    const list = onlyNames ? [] : Array.isArray(messages) ? messages.slice(0, MAX_MESSAGES_PER_FIELD) : [messages];
    fields.push([redact(field), list.filter((m) => m !== undefined && m !== null).map((m) => redact(String(m)))]);
  }
  // fromEntries defines each field as an own property: a "__proto__" field stays a field
  return Object.fromEntries(fields);
}

