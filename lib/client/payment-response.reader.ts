import { isRecord } from '../common/is-record.util.js';
import type { PaymentResponseFields } from '../config/payment-module-options.interface.js';
import type { PaymentGateway } from './payment-api.types.js';

/** The camelCase field a value is copied to. */
export type PaymentResponseField = keyof PaymentResponseFields;

/** `data` of a success answer as a record to copy: an object as is, anything else empty. */
export function recordOf(data: unknown): Record<string, unknown> {
  return isRecord(data) ? data : {};
}

/** What a successful call resolves with: the envelope's `data`, or the body itself when it has none. */
export function answerData(body: unknown): unknown {
  return isRecord(body) && 'data' in body ? body.data : body;
}

/**
 * Whether a 2xx body is the service's error envelope (`status: 'error'`, a code, no payload: its
 * `data` absent, null, or an empty array or object): the answer contradicts itself, so it is
 * neither a success nor a refusal the caller may simply repeat. One whose `data` holds something
 * is read as a success.
 */
export function isErrorEnvelope(body: unknown): boolean {
  if (!isRecord(body) || body.status !== 'error' || typeof body.code !== 'string') return false;
  const data = body.data;
  return data === undefined || data === null || (Array.isArray(data) ? data.length === 0 : isRecord(data) && Object.keys(data).length === 0);
}

/**
 * The success envelope's `data`, never the body itself: a body without `data` has no payload,
 * and its own `status` is the envelope's `'success'`, not a payment's.
 */
export function envelopeData(body: unknown): unknown {
  return isRecord(body) ? body.data : undefined;
}

/**
 * The value of the first field of `names` present in `record`: a non-empty string, or a
 * safe integer as text (ids only; a status must be a string).
 */
export function readResponseField(record: Record<string, unknown>, names: readonly string[], allowNumbers = true): string | undefined {
  for (const name of names) {
    const value = record[name];
    if (typeof value === 'string' && value !== '') return value;
    if (allowNumbers && typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  }
  return undefined;
}

/**
 * A copy of the answer's `data` with the id (from `responseFields[idField]`, else
 * `knownId`, the id the call was made with) and the status under their camelCase names;
 * when none is found that name is left out (whatever the answer had there is in `raw`),
 * so the typed fields never hold a value of another type or from another field. `answeredId`
 * is the answer's own id, if it has one.
 */
export function readServiceRecord(
  answerData: unknown,
  fields: PaymentResponseFields,
  idField: Exclude<PaymentResponseField, 'status'>,
  knownId?: string,
  statusFields: readonly string[] = fields.status,
): { record: Record<string, unknown>; id: string | undefined; answeredId: string | undefined; status: string | undefined } {
  const data = recordOf(answerData);
  const record: Record<string, unknown> = { ...data };
  const answeredId = readResponseField(data, fields[idField]);
  const id = answeredId ?? knownId;
  if (id !== undefined) record[idField] = id;
  else delete record[idField];
  const status = readResponseField(data, statusFields, false);
  if (status !== undefined) record.status = status;
  else delete record.status;
  return { record, id, answeredId, status };
}

/** Well-known names of a list of gateways inside an object answer. */
const GATEWAY_LIST_FIELDS = ['gateways', 'items', 'data', 'list', 'results'];

/**
 * The gateways of a `GET /payments/gateways` answer, or undefined when it is not a list:
 * a list; an object holding one under a well-known name (or its only list); a map of
 * id → gateway. Entries that are plain strings become `{ id }`.
 */
export function readGatewayList(data: unknown): PaymentGateway[] | undefined {
  let list: unknown[] | undefined;
  if (Array.isArray(data)) {
    list = data;
  } else if (isRecord(data)) {
    const named = GATEWAY_LIST_FIELDS.map((name) => data[name]).find(Array.isArray);
    const arrays = Object.values(data).filter(Array.isArray);
    const values = Object.values(data);
    if (named) list = named;
    else if (arrays.length === 1) list = arrays[0];
    else if (values.length > 0 && values.every(isRecord)) {
      list = Object.entries(data).map(([id, gateway]) => ({ id, ...(gateway as Record<string, unknown>) }));
    }
  }
  if (!list) return undefined;
  const gateways: PaymentGateway[] = [];
  for (const entry of list) {
    if (typeof entry === 'string' && entry !== '') gateways.push({ id: entry });
    else if (isRecord(entry)) gateways.push(entry as PaymentGateway);
    else return undefined; // not a list of gateways after all
  }
  return gateways;
}

/**
 * Whether a 2xx body is none the service writes: no JSON object, and either text that is no
 * JSON or sent as another media type (a proxy's or firewall's page, plain text; axios reads
 * `1` or `null` in a `text/html` page as JSON), an empty page included (a `text/html` answer
 * without bytes). Read as a 2xx whose body could not be read, a payment creation is asked for
 * again under its idempotency key. An empty 204, or an empty answer without a media type or as
 * JSON, and other JSON (`null`, a list) sent as JSON, are the service's answer without the
 * fields asked for: the call resolves without them.
 */
export function isForeignSuccessBody(status: number, body: unknown, mediaType: 'json' | 'other' | 'none'): boolean {
  if (body === undefined || status === 204 || isRecord(body)) return false;
  if (body === '') return mediaType === 'other';
  return typeof body === 'string' || mediaType !== 'json';
}

/**
 * Whether an id the service answered names the one asked about: the same text but for
 * surrounding spaces, or the same whole number (`7` and `'007'`). Letter case counts: ids that
 * differ in it may be two ids.
 */
export function sameServiceId(answered: string, asked: string): boolean {
  const [a, b] = [answered.trim(), asked.trim()];
  if (a === b) return true;
  return /^\d+$/.test(a) && /^\d+$/.test(b) && BigInt(a) === BigInt(b);
}
