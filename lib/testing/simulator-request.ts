import type { IncomingHttpHeaders } from 'node:http';
import { ISO_3166_ALPHA2_COUNTRY_CODES, ISO_4217_CURRENCY_CODES } from '../client/payment-iso-codes.js';
import { parseAmount } from './simulator.amounts.js';
import { SimulatorHttpError } from './simulator.errors.js';
import type { SimulatedMode } from './simulator.types.js';

/** A request the server has read and matched to an environment, as handlers see it. */
export interface SimulatorRequest {
  method: string;
  /** Path after the base, e.g. `/payment/create`. */
  route: string;
  mode: SimulatedMode;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  /** Client address: the token call is rate-limited per IP. */
  ip: string;
}

/** What the server sends back: a status and a JSON body. */
export interface SimulatorAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}


/** A success answer: the payload goes in `data`. */
export function success(status: number, data: unknown): SimulatorAnswer {
  return { status, body: { status: 'success', data } };
}

/** The error envelope of a thrown {@link SimulatorHttpError}; anything else is a 500 `INTERNAL_ERROR`. */
export function errorAnswer(err: unknown): SimulatorAnswer {
  const e = err instanceof SimulatorHttpError ? err : new SimulatorHttpError('INTERNAL_ERROR');
  return { status: e.status, body: e.toEnvelope(), headers: e.headers };
}

/**
 * How deep JSON may nest (PHP's `json_decode` default): deeper bodies are refused, as such a
 * service refuses them, and kept as text in the request log (copies of deeper values overflow the stack).
 */
const MAX_JSON_DEPTH = 512;

/** Whether JSON `text` nests arrays and objects deeper than {@link MAX_JSON_DEPTH} (brackets in strings do not count). */
export function nestsTooDeep(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** The body as a JSON object (`{}` when empty); anything else is a `PAY_4000` with a `body` message. */
export function readJsonObject(req: SimulatorRequest): Record<string, unknown> {
  if (req.raw.length === 0) return {};
  const text = req.raw.toString('utf8');
  if (nestsTooDeep(text)) {
    throw new SimulatorHttpError('PAY_4000', undefined, { body: [`The request body must not nest deeper than ${MAX_JSON_DEPTH} levels.`] });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SimulatorHttpError('PAY_4000', undefined, { body: ['The request body must be valid JSON.'] });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new SimulatorHttpError('PAY_4000', undefined, { body: ['The request body must be a JSON object.'] });
  }
  return value as Record<string, unknown>;
}

/**
 * A form body (`application/x-www-form-urlencoded`) as an object, each field's first value; a
 * body of another content type is a `PAY_4000`, as a service reading forms would answer it.
 */
export function readFormObject(req: SimulatorRequest): Record<string, string> {
  const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new SimulatorHttpError('PAY_4000', undefined, { body: ['The request body must be form-encoded (application/x-www-form-urlencoded).'] });
  }
  const fields: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(req.raw.toString('utf8'))) if (!Object.hasOwn(fields, key)) fields[key] = value;
  return fields;
}

/** Validation errors collected per field, thrown together as one `PAY_4000`. */
export type FieldErrors = Record<string, string[]>;

export function throwIfInvalid(errors: FieldErrors): void {
  if (Object.keys(errors).length) throw new SimulatorHttpError('PAY_4000', undefined, errors);
}

/** A positive amount (numeric string, at most 8 decimals) in units of 1e-8, or a message in `errors`. */
export function requireAmount(value: unknown, field: string, errors: FieldErrors): bigint | undefined {
  if (value === undefined || value === null || value === '') {
    errors[field] = [`The ${field} field is required.`];
    return undefined;
  }
  const units = parseAmount(value);
  if (units === undefined) {
    errors[field] = [`The ${field} must be a numeric string with at most 18 digits before the point and 8 after it.`];
    return undefined;
  }
  if (units <= 0n) {
    errors[field] = [`The ${field} must be greater than 0.`];
    return undefined;
  }
  return units;
}

/** `currency` is required and an ISO 4217 code. */
export function checkCurrency(body: Record<string, unknown>, errors: FieldErrors): void {
  if (body.currency === undefined) errors.currency = ['The currency field is required.'];
  // the code lists, not the shape: an app sending 'RMB' must fail here as it would at the service
  else if (typeof body.currency !== 'string' || !ISO_4217_CURRENCY_CODES.has(body.currency)) {
    errors.currency = ['The currency must be an ISO 4217 code (3 upper-case letters).'];
  }
}

/** `country` is optional; when given it is an ISO 3166-1 alpha-2 code. */
export function checkCountry(body: Record<string, unknown>, errors: FieldErrors): void {
  if (body.country !== undefined && (typeof body.country !== 'string' || !ISO_3166_ALPHA2_COUNTRY_CODES.has(body.country))) {
    errors.country = ['The country must be an ISO 3166-1 alpha-2 code (2 upper-case letters).'];
  }
}

/**
 * `record` if it belongs to the merchant, else the not-found `code`: another
 * merchant's resource is answered exactly like one that does not exist.
 */
export function ownedBy<T extends { merchantId: number }>(record: T | undefined, merchantId: number, code: string): T {
  if (!record || record.merchantId !== merchantId) throw new SimulatorHttpError(code);
  return record;
}

/** A percent-decoded path segment; malformed encoding is a `PAY_4000`. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SimulatorHttpError('PAY_4000', undefined, { path: ['The path contains malformed percent-encoding.'] });
  }
}
