import { isUtf8 } from 'node:buffer';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { WebhookInvalidEnvelopeError, WebhookInvalidJsonError } from './payment-webhook.errors.js';

/** Longest accepted `eventId` / `eventType`: they become store keys and log fields. */
const MAX_ID_LENGTH = 512;

// Fixed-shape patterns (no nested quantifiers), so no catastrophic backtracking.
const API_VERSION = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)$/;

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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks `body` against the envelope of spec 2.1 and returns it typed. Unknown event
 * types pass (they reach `'*'` handlers); unknown top-level fields are kept.
 * Throws `WebhookInvalidEnvelopeError` listing every bad field.
 */
export function validateWebhookEnvelope(body: unknown): AnyPaymentEvent {
  if (!isPlainObject(body)) {
    throw new WebhookInvalidEnvelopeError({ body: ['must be a JSON object'] });
  }
  const errors: Record<string, string[]> = {};
  const fail = (field: string, message: string): void => {
    (errors[field] ??= []).push(message);
  };

  const checkId = (field: 'eventId' | 'eventType' | 'environment'): void => {
    const value = body[field];
    if (typeof value !== 'string') fail(field, 'must be a string');
    else if (value.trim().length === 0) fail(field, 'must not be empty');
    else if (value.length > MAX_ID_LENGTH) fail(field, `must be at most ${MAX_ID_LENGTH} characters`);
  };
  checkId('eventId');
  checkId('eventType');
  checkId('environment');

  const apiVersion = body.apiVersion;
  if (typeof apiVersion !== 'string') {
    fail('apiVersion', 'must be a string');
  } else {
    const m = API_VERSION.exec(apiVersion);
    if (!m || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) {
      fail('apiVersion', 'must be a date formatted YYYY-MM-DD');
    }
  }

  const createdAt = body.createdAt;
  if (typeof createdAt !== 'string') {
    fail('createdAt', 'must be a string');
  } else if (!ISO_DATE_TIME.test(createdAt) || Number.isNaN(Date.parse(createdAt.replace(' ', 'T')))) {
    fail('createdAt', 'must be an ISO 8601 date-time with a time zone');
  }

  if (!isPlainObject(body.data)) {
    fail('data', 'must be an object');
  }

  if (Object.keys(errors).length > 0) {
    throw new WebhookInvalidEnvelopeError(errors);
  }
  return body as unknown as AnyPaymentEvent;
}

function isCalendarDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return day <= days;
}

/** `parseWebhookJson` then `validateWebhookEnvelope`. */
export function parseWebhookEnvelope(rawBody: Buffer | string): AnyPaymentEvent {
  return validateWebhookEnvelope(parseWebhookJson(rawBody));
}
