import { isUtf8 } from 'node:buffer';
import { isRecord } from '../common/is-record.util.js';
import { stripUndefined } from '../common/strip-undefined.util.js';
import { isWellFormedUnicode } from '../common/well-formed-unicode.util.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { WebhookInvalidEnvelopeError, WebhookInvalidJsonError } from './payment-webhook.errors.js';

/** Longest accepted `eventId` / `eventType`: they become store keys and log fields. */
export const MAX_EVENT_ID_LENGTH = 512;

/**
 * What an event type must look like before it is used as an EventEmitter2 name: dot-separated
 * lower-case words, so a signed `payment.*` or `**` can never fan out to wildcard listeners.
 */
const EVENT_TYPE = /^[a-z0-9_]+(\.[a-z0-9_]+)*$/;

// A fixed-shape pattern (no nested quantifiers), so no catastrophic backtracking.
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/;

/** A field delivered as received although it is not what the service documents (what `parseWebhookEnvelope`'s `onAnomaly` gets). @publicApi */
export interface WebhookEnvelopeAnomaly {
  field: 'apiVersion' | 'createdAt' | 'environment';
  kind: 'missing' | 'not-a-string' | 'malformed';
}

/**
 * Parses raw webhook bytes as JSON. Bytes that are not valid UTF-8 are refused (400) rather
 * than decoded leniently: lossy decoding would turn different byte strings into the same
 * text (two distinct `eventId`s deduplicated as one) and hand handlers altered values.
 */
export function parseWebhookJson(rawBody: Buffer | string): unknown {
  if (typeof rawBody !== 'string' && !isUtf8(rawBody)) {
    throw new WebhookInvalidJsonError('The webhook body is not valid UTF-8');
  }
  let text = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new WebhookInvalidJsonError();
  }
}

/** What is wrong with `eventId` as the route takes one, or `undefined` when nothing is. */
export function eventIdProblem(eventId: unknown): string | undefined {
  if (typeof eventId !== 'string') return 'must be a string';
  if (eventId.trim().length === 0) return 'must not be empty';
  if (eventId.length > MAX_EVENT_ID_LENGTH) return `must be at most ${MAX_EVENT_ID_LENGTH} characters`;
  if (!isWellFormedUnicode(eventId)) return 'must be well-formed Unicode (no lone surrogates)';
  return undefined;
}

/**
 * Checks a parsed, signature-verified body and returns it as an event. Only what dispatch
 * needs is required (400 `WEBHOOK_INVALID_ENVELOPE` listing every bad field otherwise):
 * - `eventId`: a non-blank, well-formed Unicode string of at most 512 characters (the
 *   deduplication key);
 * - `eventType`: dot-separated lower-case words (`payment.succeeded`), at most 512
 *   characters (the handler and EventEmitter2 name; unknown types reach `'*'` handlers);
 * - `data`: an object.
 * `apiVersion`, `createdAt` and `environment` are delivered as received even when they are
 * missing or not in the documented format (a signed event is never refused over a format
 * detail, since a refusal ends with the service abandoning it); one that is not a string is
 * left out. `onAnomaly` hears each such case. Unknown top-level fields are kept.
 */
export function validateWebhookEnvelope(body: unknown, onAnomaly?: (anomaly: WebhookEnvelopeAnomaly) => void): AnyPaymentEvent {
  if (!isRecord(body)) {
    throw new WebhookInvalidEnvelopeError({ body: ['must be a JSON object'] });
  }
  let errors: Record<string, string[]> | undefined;
  const fail = (field: string, message: string): void => {
    ((errors ??= {})[field] ??= []).push(message);
  };

  const eventId = body.eventId;
  const eventIdFault = eventIdProblem(eventId);
  if (eventIdFault !== undefined) fail('eventId', eventIdFault);

  const eventType = body.eventType;
  if (typeof eventType !== 'string') fail('eventType', 'must be a string');
  else if (eventType.length > MAX_EVENT_ID_LENGTH) fail('eventType', `must be at most ${MAX_EVENT_ID_LENGTH} characters`);
  else if (!EVENT_TYPE.test(eventType)) fail('eventType', "must be dot-separated lower-case words, e.g. 'payment.succeeded'");

  if (!isRecord(body.data)) fail('data', 'must be an object');

  if (errors !== undefined) {
    // the id and type where they are well formed, for the refusal's log line
    const named = { eventId: errors['eventId'] ? undefined : (eventId as string), eventType: errors['eventType'] ? undefined : (eventType as string) };
    throw new WebhookInvalidEnvelopeError(errors, stripUndefined(named));
  }
  checkDeliveredAsReceived(body, onAnomaly);
  return body as unknown as AnyPaymentEvent;
}

/**
 * The documented formats of the fields delivered as received; each departure is reported, never
 * refused. A value that is not even a string is left out (the event's type says "a string, or
 * absent", and a handler must not meet a number there).
 */
function checkDeliveredAsReceived(body: Record<string, unknown>, onAnomaly?: (anomaly: WebhookEnvelopeAnomaly) => void): void {
  const apiVersion = stringOrOmitted(body, 'apiVersion', onAnomaly);
  if (apiVersion !== undefined && !isCalendarDate(apiVersion)) onAnomaly?.({ field: 'apiVersion', kind: 'malformed' });
  const createdAt = stringOrOmitted(body, 'createdAt', onAnomaly);
  if (createdAt !== undefined && !ISO_DATE_TIME.test(createdAt)) onAnomaly?.({ field: 'createdAt', kind: 'malformed' });
  const environment = stringOrOmitted(body, 'environment', onAnomaly);
  if (environment !== undefined && environment.trim().length === 0) onAnomaly?.({ field: 'environment', kind: 'malformed' });
}

/** The field when it is a string; reports it missing, or not a string and then removes it. */
function stringOrOmitted(
  body: Record<string, unknown>,
  field: WebhookEnvelopeAnomaly['field'],
  onAnomaly: ((anomaly: WebhookEnvelopeAnomaly) => void) | undefined,
): string | undefined {
  const value = body[field];
  if (typeof value === 'string') return value;
  if (value === undefined) {
    onAnomaly?.({ field, kind: 'missing' });
  } else {
    onAnomaly?.({ field, kind: 'not-a-string' });
    delete body[field];
  }
  return undefined;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `YYYY-MM-DD` naming a real day (checked on every delivery, so without allocating). */
function isCalendarDate(text: string): boolean {
  if (text.length !== 10 || text.charCodeAt(4) !== 0x2d || text.charCodeAt(7) !== 0x2d) return false;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 7);
  const day = digitsAt(text, 8, 10);
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
}

/** The decimal number of `text[from, to)`, or -1 when a character is not a digit. */
function digitsAt(text: string, from: number, to: number): number {
  let value = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    value = value * 10 + c;
  }
  return value;
}

/**
 * `parseWebhookJson` then `validateWebhookEnvelope`: the checks the module's route runs on
 * the verified bytes.
 * @publicApi
 */
export function parseWebhookEnvelope(rawBody: Buffer | string, onAnomaly?: (anomaly: WebhookEnvelopeAnomaly) => void): AnyPaymentEvent {
  return validateWebhookEnvelope(parseWebhookJson(rawBody), onAnomaly);
}
