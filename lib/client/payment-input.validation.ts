import { isRecord } from '../common/is-record.util.js';
import { isWellFormedUnicode } from '../common/well-formed-unicode.util.js';
import { MAX_FIELD_ERRORS, MAX_MESSAGES_PER_FIELD, PaymentErrorCode, PaymentValidationError } from './payment-api.errors.js';
import { ISO_3166_ALPHA2_COUNTRY_CODES, ISO_4217_CURRENCY_CODES } from './payment-iso-codes.js';

/** Decimal places of every amount on the wire (numeric strings with 8 decimal places). */
const AMOUNT_DECIMALS = 8;

/** Digits before the decimal point: more is no amount anyone pays (and no number a service keeps exactly). */
const AMOUNT_INTEGER_DIGITS = 18;

const AMOUNT_PATTERN = /^(\d{1,18})(?:\.(\d{1,8}))?$/;
const MAX_IDENTIFIER_LENGTH = 255;

/**
 * Collects field problems of one input so the thrown error names all of them at once.
 * Nothing is sent while a collector has problems.
 */
export class InputChecker {
  // no prototype: a misspelt field named `constructor` or `__proto__` is a field like any other
  private readonly problems: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  private fieldsWithProblems = 0;

  /** @param account named on the validation error, so a multi-account app knows which client refused */
  constructor(private readonly account?: string) {}

  /** Records a problem; beyond `MAX_FIELD_ERRORS` fields (or `MAX_MESSAGES_PER_FIELD` of one), only that there were more. */
  add(field: string, message: string): void {
    const messages = this.problems[field];
    if (messages !== undefined) {
      if (messages.length < MAX_MESSAGES_PER_FIELD) messages.push(message);
    } else if (!this.full) {
      this.problems[field] = [message];
      this.fieldsWithProblems++;
    }
  }

  /**
   * No further field would be named: the call fails anyway, so a long input (an array of a
   * million bad elements, or of length 2^32 - 1 with holes) need not be checked to its end.
   */
  get full(): boolean {
    return this.fieldsWithProblems >= MAX_FIELD_ERRORS;
  }

  /** Returns the wire form of an amount, or records why it is bad. */
  amount(field: string, value: unknown, required = true): string | undefined {
    if (value === undefined || value === null) {
      if (required) this.add(field, 'is required');
      return undefined;
    }
    const normalized = normalizeAmount(value);
    if (typeof normalized !== 'string') {
      this.add(field, normalized.problem);
      return undefined;
    }
    return normalized;
  }

  currency(field: string, value: unknown): string | undefined {
    if (typeof value !== 'string' || !/^[A-Z]{3}$/.test(value)) {
      this.add(field, 'must be an ISO 4217 code of 3 uppercase letters, e.g. USD');
      return undefined;
    }
    if (!ISO_4217_CURRENCY_CODES.has(value)) {
      this.add(field, `is not an active ISO 4217 currency code: ${value}`);
      return undefined;
    }
    return value;
  }

  /** An optional country: absent is fine, anything else must be a real ISO 3166-1 alpha-2 code. */
  country(field: string, value: unknown): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string' || !/^[A-Z]{2}$/.test(value) || !ISO_3166_ALPHA2_COUNTRY_CODES.has(value)) {
      this.add(field, 'must be an ISO 3166-1 alpha-2 country code of 2 uppercase letters, e.g. US');
      return undefined;
    }
    return value;
  }

  /**
   * Identifiers go into paths and keys: non-empty, bounded, no control characters; one that may go
   * into a path (`pathSegment`, the default) is also one path segment.
   */
  identifier(field: string, value: unknown, pathSegment = true): string | undefined {
    if (typeof value !== 'string' || value.length === 0 || value.trim() !== value) {
      this.add(field, 'must be a non-empty string without surrounding spaces');
      return undefined;
    }
    if (value.length > MAX_IDENTIFIER_LENGTH) {
      this.add(field, `must be at most ${MAX_IDENTIFIER_LENGTH} characters`);
      return undefined;
    }
    if (pathSegment && (value === '.' || value === '..')) {
      // would become a dot segment of the URL path and address another resource
      this.add(field, 'must not be "." or ".."');
      return undefined;
    }
    if (pathSegment && /[/\\]/.test(value)) {
      // the service uses ids as one path segment; encoded, a slash still reaches a proxy that decodes
      // %2F before it routes (`x/../../payout` would take a refund's body elsewhere)
      this.add(field, 'must not contain "/" or "\\" (an id is one path segment)');
      return undefined;
    }
    if (/[\u0000-\u001f\u007f]/.test(value)) {
      this.add(field, 'must not contain control characters');
      return undefined;
    }
    if (!isWellFormedUnicode(value)) {
      // cannot be URL-encoded into a path or query
      this.add(field, 'must be well-formed Unicode (no lone surrogates)');
      return undefined;
    }
    return value;
  }

  optionalString(field: string, value: unknown): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') {
      this.add(field, 'must be a string');
      return undefined;
    }
    return value;
  }

  optionalObject(field: string, value: unknown, required = false): Record<string, unknown> | undefined {
    if (value === undefined || value === null) {
      if (required) this.add(field, 'is required');
      return undefined;
    }
    if (!isRecord(value)) {
      this.add(field, 'must be an object');
      return undefined;
    }
    return this.jsonData(field, value) ? (value as Record<string, unknown>) : undefined;
  }

  /** `request()`'s body: a JSON object or array that JSON sends as written. */
  requestBody(field: string, value: unknown): unknown {
    if (value === undefined) return undefined;
    if (typeof value !== 'object' || value === null) {
      this.add(field, 'must be a JSON object or array (or left out)');
      return undefined;
    }
    return this.jsonData(field, value) ? value : undefined;
  }

  /** Records why JSON would not send `value` as written (see `jsonDataProblem`); true when it would. */
  private jsonData(field: string, value: unknown): boolean {
    const found = jsonDataProblem(value);
    if (found === undefined) return true;
    this.add(`${field}${found.at}`, found.problem);
    return false;
  }

  /**
   * An operation's input object. A field it does not know (`ammount`, `returnURL`) is refused:
   * on a money call a silently dropped field changes what is sent (a refund without its
   * amount refunds the whole payment). Unknown fields of a call's own `input`/`options` are
   * named as they are (`ammount`), those of a nested object with its path (`splits[0].amont`).
   */
  inputObject(field: string, value: unknown, known: readonly string[], required = true): Record<string, unknown> | undefined {
    if (value === undefined) {
      if (required) this.add(field, 'is required');
      return undefined;
    }
    if (!isRecord(value)) {
      this.add(field, 'must be an object');
      return undefined;
    }
    for (const key of Object.keys(value)) {
      if (known.includes(key)) continue;
      const name = field === 'input' || field === 'options' ? key : `${field}.${key}`;
      this.add(name, `is not a field of ${field}; known: ${known.join(', ')}`);
    }
    return value as Record<string, unknown>;
  }

  /**
   * `extra` adds wire fields the typed input does not cover. A wire field the module writes
   * from the typed input (the amount, the idempotency key, ...) is refused: overwriting it
   * would silently drop the caller's value, sending it would skip its checks.
   * @param written wire field → the typed input that sets it
   */
  extra(value: unknown, written: Readonly<Record<string, string>>): Record<string, unknown> | undefined {
    const extra = this.optionalObject('extra', value);
    for (const wire of Object.keys(extra ?? {})) {
      if (Object.hasOwn(written, wire)) this.add(`extra.${wire}`, `is written by the module; use ${written[wire]} instead`);
    }
    return extra;
  }

  /** A call's `options`: an object with `signal` only. Returns the signal. */
  callOptions(value: unknown): AbortSignal | undefined {
    return this.signal(this.inputObject('options', value, ['signal'], false)?.signal);
  }

  signal(value: unknown): AbortSignal | undefined {
    if (value === undefined) return undefined;
    if (!(value instanceof AbortSignal)) {
      this.add('signal', 'must be an AbortSignal (e.g. AbortSignal.timeout(5000))');
      return undefined;
    }
    return value;
  }

  /** Throws a client-side `PaymentValidationError` naming every bad field, if any. */
  throwIfInvalid(operation: string): void {
    const fields = Object.keys(this.problems);
    if (fields.length === 0) return;
    let summary = fields.map((f) => `${f} ${this.problems[f].join(', ')}`).join('; ');
    if (this.full) summary += `; (the first ${MAX_FIELD_ERRORS} fields with problems; there may be more)`;
    throw new PaymentValidationError({
      code: PaymentErrorCode.VALIDATION_FAILED,
      message: `Invalid ${operation} input (nothing was sent): ${summary}`,
      errors: Object.fromEntries(Object.entries(this.problems)),
      clientSide: true,
      account: this.account,
    });
  }
}

/** Objects whose data JSON does not see: `JSON.stringify` writes them as `{}` (or index keys). */
const UNWRITABLE_BRANDS = /^\[object (Map|Set|WeakMap|WeakSet|WeakRef|ArrayBuffer|SharedArrayBuffer|DataView|RegExp|Promise|Error|\w+Array)\]$/;

/** Deeper than this, a body is refused (and walking it cannot exhaust the stack). */
const MAX_JSON_DEPTH = 64;

/**
 * Where and why JSON would not send `value` as the caller wrote it, or `undefined`: JSON writes
 * NaN and Infinity as null, drops functions and symbols (as null in an array, as does a hole or
 * `undefined` there), and throws on a BigInt or a cycle. A `__proto__` key (JSON.parse makes one)
 * is refused: it would be sent although no check of the fields the module writes saw it. An
 * `undefined` field is left out, as JSON does; an object with `toJSON` (a Date) writes itself.
 * `at` is the path below the checked value (`.recipient.account`, `[2]`), '' for the value itself.
 */
function jsonDataProblem(value: unknown, at = '', parents: object[] = []): { at: string; problem: string } | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : { at, problem: 'must be a finite number (JSON would send null)' };
    case 'bigint':
      return { at, problem: 'must not be a BigInt (JSON cannot write it)' };
    case 'function':
    case 'symbol':
    case 'undefined':
      return { at, problem: `must be JSON data, not ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`} (JSON would drop it)` };
  }
  if (value === null || typeof (value as { toJSON?: unknown }).toJSON === 'function') return undefined;
  const object = value as object;
  if (parents.includes(object)) return { at, problem: 'must not contain itself (a circular reference)' };
  if (parents.length >= MAX_JSON_DEPTH) return { at, problem: `must not be nested deeper than ${MAX_JSON_DEPTH} levels` };
  parents.push(object);
  try {
    if (Array.isArray(object)) {
      for (let i = 0; i < object.length; i++) {
        const found = jsonDataProblem(object[i], `${at}[${i}]`, parents);
        if (found) return found;
      }
      return undefined;
    }
    // By brand, not prototype: a DTO or an object of another realm (structuredClone, fetch's json())
    // is written as its own fields, as expected; these keep their data where JSON does not look ({} for a Map)
    const brand = Object.prototype.toString.call(object);
    if (UNWRITABLE_BRANDS.test(brand)) {
      return { at, problem: `must be JSON data, not a ${brand.slice(8, -1)} (JSON would send it as {})` };
    }
    for (const key of Object.keys(object)) {
      const item = (object as Record<string, unknown>)[key];
      if (key === '__proto__') return { at: `${at}.${key}`, problem: 'is not a field JSON data may have ("__proto__")' };
      if (item === undefined) continue;
      const found = jsonDataProblem(item, `${at}.${key}`, parents);
      if (found) return found;
    }
    return undefined;
  } finally {
    parents.pop();
  }
}

/** Any decimal of this many significant digits survives a trip through a double unchanged. */
const EXACT_NUMBER_DIGITS = 15;

/**
 * Whether `text` (`String(value)`) is surely the amount the caller wrote: a safe integer, or a
 * number of at most 15 significant digits (more may have been rounded when it was parsed).
 */
function isExactNumber(value: number, text: string): boolean {
  if (Number.isInteger(value)) return Number.isSafeInteger(value);
  return text.replace(/[^0-9]/g, '').replace(/^0+/, '').length <= EXACT_NUMBER_DIGITS;
}

/**
 * Turns `10`, `'10.5'` or `'0010.50000000'` into `'10.50000000'`. Rejects negatives,
 * zero, NaN, exponents, more than 8 decimals and numbers that may have been rounded when
 * they were parsed, rather than rounding money.
 */
export function normalizeAmount(value: unknown): string | { problem: string } {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return { problem: 'must be a finite number' };
    text = String(value);
    // String() writes small fractions with an exponent (1e-8): their decimals, when at most 8 of them
    if (text.includes('e-')) {
      const fixed = value.toFixed(AMOUNT_DECIMALS);
      if (Number(fixed) !== value) return { problem: `must have at most ${AMOUNT_DECIMALS} decimals` };
      text = fixed;
    }
    // a number that is not what was written must not be sent rounded: 12345678901234567 is
    // 12345678901234568 once parsed, 1234567890.12345678 is 1234567890.1234567
    if (!isExactNumber(value, text)) {
      return { problem: `is not exact as a JavaScript number (more than ${EXACT_NUMBER_DIGITS} significant digits): pass it as a string such as "10.50"` };
    }
  } else if (typeof value === 'string') {
    text = value;
  } else {
    return { problem: 'must be a numeric string such as "10.50" or a number' };
  }
  if (text.startsWith('-')) return { problem: 'must not be negative' };
  const match = AMOUNT_PATTERN.exec(text);
  if (!match) {
    const tooLong = /^(\d+)(?:\.\d+)?$/.exec(text);
    if (tooLong !== null && tooLong[1]!.length > AMOUNT_INTEGER_DIGITS) {
      return { problem: `must have at most ${AMOUNT_INTEGER_DIGITS} digits before the decimal point` };
    }
    return { problem: `must be a numeric string with at most ${AMOUNT_DECIMALS} decimals, e.g. "10.50"` };
  }
  const integer = match[1].replace(/^0+(?=\d)/, '');
  const fraction = (match[2] ?? '').padEnd(AMOUNT_DECIMALS, '0');
  if (/^0+$/.test(integer) && /^0+$/.test(fraction)) return { problem: 'must be greater than 0' };
  return `${integer}.${fraction}`;
}
