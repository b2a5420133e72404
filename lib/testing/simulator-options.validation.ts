import { matchesPathTemplate } from '../common/api-path.util.js';
import { isRecord } from '../common/is-record.util.js';
import { likelyKey } from '../common/likely-key.util.js';
import { SPEC_RETRY_DELAYS_MS } from './simulator-webhook.deliverer.js';
import { MAX_TIMER_MS } from '../common/promise-timeout.util.js';
import { BASE_PATHS } from './simulator.constants.js';
import { SIMULATOR_ERROR_TABLE } from './simulator.errors.js';
import { SIMULATOR_ROUTE_SHAPES } from './simulator.router.js';
import {
  PAYMENT_OUTCOMES,
  type PaymentServiceSimulatorOptions,
  type SimulatedMerchant,
  type SimulatedSubaccount,
  type SimulatorDeliveryFaults,
  type SimulatorFault,
} from './simulator.types.js';

const HTTP_METHODS: readonly string[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/*
 * The simulator exists to catch mistakes in the apps tested against it: a typo in its own
 * options or control calls must fail loudly, not silently switch a limit off or settle a
 * payment in a state the service never reports.
 */

const RATE_LIMIT_KEYS = ['tokenPerMinute', 'createPaymentPerMinute', 'readsPerMinute', 'moneyMovementPerMinute'];
const MODES = ['sandbox', 'live'];
const FAULT_KINDS = ['status', 'reset', 'stall', 'rewrite', 'trickle'];

// Every key of each input: the compiler keeps these lists complete when a field is added.
const OPTION_KEYS: Record<keyof PaymentServiceSimulatorOptions, true> = {
  merchants: true, now: true, signatureClock: true, webhookTimeScale: true, deliveryTimeoutMs: true, rateLimits: true,
  defaultOutcome: true, confirmationDelayMs: true, paymentSessionTtlMs: true, maxBodyBytes: true, host: true, port: true, tokenRequest: true,
};
const MERCHANT_KEYS: Record<keyof SimulatedMerchant, true> = {
  merchantId: true, clientId: true, clientSecret: true, webhookSecret: true, mode: true, webhookUrl: true,
  walletBalance: true, active: true, payoutApprovalRequired: true, subaccounts: true,
};
const SUBACCOUNT_KEYS: Record<keyof SimulatedSubaccount, true> = { subaccountId: true, autoPayout: true, failPayouts: true };
const FAULT_KEYS: Record<keyof SimulatorFault, true> = {
  method: true, path: true, mode: true, kind: true, status: true, code: true, retryAfterSeconds: true, times: true,
  afterHandling: true, trickleMs: true, rewrite: true,
};

/** How each number option is bounded: a delay must be a timer Node can keep. */
const NUMBER_OPTIONS: ReadonlyArray<[keyof PaymentServiceSimulatorOptions, { min: number; max: number; integer?: boolean; unit: string }]> = [
  // the longest retry (24 h) scaled must still be a timer Node keeps
  ['webhookTimeScale', { min: 0, max: Math.floor((MAX_TIMER_MS / Math.max(...SPEC_RETRY_DELAYS_MS)) * 1000) / 1000, unit: 'factor' }],
  // a time-out of 0 would fail every delivery before the receiver could answer
  ['deliveryTimeoutMs', { min: 1, max: MAX_TIMER_MS, unit: 'number of ms' }],
  ['confirmationDelayMs', { min: 0, max: MAX_TIMER_MS, unit: 'number of ms' }],
  ['paymentSessionTtlMs', { min: 0, max: Number.MAX_SAFE_INTEGER, unit: 'number of ms' }],
  ['maxBodyBytes', { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true, unit: 'whole number of bytes' }],
  ['port', { min: 0, max: 65535, integer: true, unit: 'port number' }],
];

/** Throws a `TypeError` (or `RangeError`) naming the first bad constructor option. */
export function assertSimulatorOptions(options: PaymentServiceSimulatorOptions): void {
  if (!isRecord(options as unknown)) throw new TypeError(`PaymentServiceSimulator options must be an object (not ${show(options)})`);
  assertKnownKeys('PaymentServiceSimulator option', options, OPTION_KEYS);
  for (const key of ['now', 'signatureClock'] as const) {
    if (options[key] !== undefined && typeof options[key] !== 'function') throw new TypeError(`PaymentServiceSimulator option '${key}' must be a function returning ms`);
  }
  for (const [key, { min, max, integer, unit }] of NUMBER_OPTIONS) {
    const value = options[key];
    if (value === undefined) continue;
    if (typeof value !== 'number') throw new TypeError(`PaymentServiceSimulator option '${key}' must be a ${unit} (not ${show(value)})`);
    if (!(value >= min && value <= max) || (integer && !Number.isInteger(value))) {
      throw new RangeError(`PaymentServiceSimulator option '${key}' must be a ${unit} from ${min} to ${max} (not ${value})`);
    }
  }
  assertRateLimits(options.rateLimits);
  assertTokenRequest(options.tokenRequest);
  if (options.defaultOutcome !== undefined && !PAYMENT_OUTCOMES.includes(options.defaultOutcome)) {
    throw new TypeError(`defaultOutcome ${JSON.stringify(options.defaultOutcome)} is unknown; known: ${PAYMENT_OUTCOMES.join(', ')}`);
  }
  if (options.merchants !== undefined && !Array.isArray(options.merchants)) throw new TypeError("PaymentServiceSimulator option 'merchants' must be an array");
  options.merchants?.forEach(assertMerchant);
}

function assertRateLimits(limits: PaymentServiceSimulatorOptions['rateLimits']): void {
  if (limits === undefined || typeof limits === 'boolean') return;
  if (!isRecord(limits)) {
    throw new TypeError(`PaymentServiceSimulator option 'rateLimits' must be true, false or an object of per-minute limits (not ${show(limits)})`);
  }
  for (const [key, value] of Object.entries(limits)) {
    if (value === undefined) continue;
    if (!RATE_LIMIT_KEYS.includes(key)) throw new TypeError(`rateLimits.${key} is unknown${likelyKey(key, RATE_LIMIT_KEYS) || `; known: ${RATE_LIMIT_KEYS.join(', ')}`}`);
    if (!Number.isInteger(value) || (value as number) < 1) {
      // a number out of range is a RangeError, as for the other numeric options; anything else a TypeError
      const ErrorClass = typeof value === 'number' ? RangeError : TypeError;
      throw new ErrorClass(`rateLimits.${key} must be a whole number of requests per minute, at least 1 (leave it out for the spec's value)`);
    }
  }
}

const TOKEN_REQUEST_KEYS = ['clientIdField', 'clientSecretField', 'encoding'];

function assertTokenRequest(tokenRequest: PaymentServiceSimulatorOptions['tokenRequest']): void {
  if (tokenRequest === undefined) return;
  if (!isRecord(tokenRequest as unknown)) throw new TypeError(`PaymentServiceSimulator option 'tokenRequest' must be an object (not ${show(tokenRequest)})`);
  for (const key of Object.keys(tokenRequest)) {
    if (!TOKEN_REQUEST_KEYS.includes(key)) throw new TypeError(`tokenRequest.${key} is unknown${likelyKey(key, TOKEN_REQUEST_KEYS) || `; known: ${TOKEN_REQUEST_KEYS.join(', ')}`}`);
  }
  for (const key of ['clientIdField', 'clientSecretField'] as const) {
    const field = tokenRequest[key];
    if (field !== undefined && (typeof field !== 'string' || field === '')) throw new TypeError(`tokenRequest.${key} must be a non-empty string (not ${show(field)})`);
  }
  if (tokenRequest.clientIdField !== undefined && tokenRequest.clientIdField === tokenRequest.clientSecretField) throw new TypeError('tokenRequest.clientIdField and clientSecretField must differ');
  if (tokenRequest.encoding !== undefined && tokenRequest.encoding !== 'json' && tokenRequest.encoding !== 'form') {
    throw new TypeError(`tokenRequest.encoding must be 'json' or 'form' (not ${show(tokenRequest.encoding)})`);
  }
}

function assertMerchant(merchant: SimulatedMerchant, index: number): void {
  const at = `merchants[${index}]`;
  if (!isRecord(merchant as unknown)) throw new TypeError(`${at} must be an object (not ${show(merchant)})`);
  assertKnownKeys(`${at}: key`, merchant, MERCHANT_KEYS);
  if (!Number.isSafeInteger(merchant.merchantId)) throw new TypeError(`${at}: merchantId must be a whole number (not ${show(merchant.merchantId)})`);
  for (const key of ['clientId', 'clientSecret', 'webhookSecret'] as const) {
    if (typeof merchant[key] !== 'string' || merchant[key] === '') throw new TypeError(`merchant ${merchant.merchantId}: ${key} must be a non-empty string`);
  }
  if (!MODES.includes(merchant.mode)) {
    throw new TypeError(`merchant ${merchant.merchantId}: mode must be 'sandbox' or 'live' (not ${JSON.stringify(merchant.mode)})`);
  }
  // `payoutApprovalRequired: 'true'` would be read as false
  for (const key of ['active', 'payoutApprovalRequired'] as const) assertOptionalBoolean(`merchant ${merchant.merchantId}: ${key}`, merchant[key]);
  if (merchant.webhookUrl !== undefined) assertWebhookUrl(merchant.webhookUrl);
  if (merchant.subaccounts === undefined) return;
  if (!Array.isArray(merchant.subaccounts)) throw new TypeError(`merchant ${merchant.merchantId}: subaccounts must be an array`);
  merchant.subaccounts.forEach((subaccount, i) => {
    const sub = `merchant ${merchant.merchantId}: subaccounts[${i}]`;
    if (!isRecord(subaccount as unknown)) throw new TypeError(`${sub} must be an object (not ${show(subaccount)})`);
    assertKnownKeys(`${sub}: key`, subaccount, SUBACCOUNT_KEYS);
    if (typeof subaccount.subaccountId !== 'string' || subaccount.subaccountId === '') throw new TypeError(`${sub}: subaccountId must be a non-empty string`);
    for (const key of ['autoPayout', 'failPayouts'] as const) assertOptionalBoolean(`${sub}: ${key}`, subaccount[key]);
  });
}

/** An absolute http(s) URL: a URL without its scheme would only fail six deliveries later. */
export function assertWebhookUrl(url: string): void {
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new TypeError(`webhook URL ${JSON.stringify(url)} is not an absolute URL (e.g. http://127.0.0.1:3000/payments/webhook)`);
  }
  if (protocol !== 'http:' && protocol !== 'https:') throw new TypeError(`webhook URL ${JSON.stringify(url)} must be http: or https:`);
}

/** A fault the simulator can answer with: known keys, a known kind, each field of its type and for its kind. */
export function assertFault(fault: SimulatorFault): void {
  if (!isRecord(fault as unknown)) throw new TypeError(`injectFault: the fault must be an object (not ${show(fault)})`);
  // a misspelt field (`time: 3`) would leave the fault at its default (once)
  assertKnownKeys('fault key', fault, FAULT_KEYS);
  if (!FAULT_KINDS.includes(fault.kind)) throw new TypeError(`fault.kind ${JSON.stringify(fault.kind)} is unknown; known: ${FAULT_KINDS.join(', ')}`);
  // fields of the `status` kind on another one would be ignored
  for (const key of ['status', 'code', 'retryAfterSeconds'] as const) {
    if (fault[key] !== undefined && fault.kind !== 'status') throw new TypeError(`fault.${key} only applies to kind 'status', not '${fault.kind}'`);
  }
  if (fault.status !== undefined && (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599)) {
    throw new RangeError(`fault.status must be an error status from 400 to 599 (not ${fault.status})`);
  }
  if (fault.code !== undefined && (typeof fault.code !== 'string' || fault.code === '')) throw new TypeError(`fault.code must be a non-empty string (not ${show(fault.code)})`);
  // the status comes from the code: a misspelt one (PAY_2OO1) would be a 500 instead of the 404 meant
  if (fault.code !== undefined && fault.status === undefined && !Object.hasOwn(SIMULATOR_ERROR_TABLE, fault.code)) {
    const codes = Object.keys(SIMULATOR_ERROR_TABLE);
    throw new TypeError(
      `fault.code ${JSON.stringify(fault.code)} is not a code the simulator knows${likelyKey(fault.code, codes)} ` +
        `(known: ${codes.join(', ')}); give status as well for a code of your own`,
    );
  }
  // requests are matched on the upper-case method: 'get' would never match
  if (fault.method !== undefined && !HTTP_METHODS.includes(fault.method)) {
    throw new TypeError(`fault.method ${JSON.stringify(fault.method)} is unknown; known: ${HTTP_METHODS.join(', ')}`);
  }
  // an unknown mode or a path of another type would match no request, and the fault would wait for ever
  if (fault.mode !== undefined && !MODES.includes(fault.mode)) throw new TypeError(`fault.mode ${JSON.stringify(fault.mode)} is unknown; known: ${MODES.join(', ')}`);
  if (fault.path !== undefined && typeof fault.path !== 'string' && !(fault.path instanceof RegExp)) {
    throw new TypeError(`fault.path must be a string or a RegExp (not ${show(fault.path)})`);
  }
  // a route never holds '/api/v1' (ids are one path segment): such a pattern was written for the whole path
  if (fault.path instanceof RegExp && /api(?:\\\/|\/)v1/.test(fault.path.source)) {
    throw new TypeError(
      `fault.path ${String(fault.path)} can never match: a RegExp is tried on the route only, the part after /api/v1 ` +
        "(e.g. /^\\/payment\\/create$/); for one environment add mode: 'sandbox' or 'live'",
    );
  }
  // a string path is compared with the request's path as it is: without its leading '/', or with
  // a query, it would match nothing and the test it serves would pass untested
  if (typeof fault.path === 'string' && !isFaultablePath(fault.path)) {
    throw new TypeError(
      `fault.path ${JSON.stringify(fault.path)} can never match: a string is compared with the whole route a request takes, ` +
        "from its leading '/', without a query, with the real id (e.g. '/payment/create', '/payment/trx_123/refund'); " +
        'for part of a path or any id, give a RegExp (e.g. /\\/refund$/)',
    );
  }
  assertOptionalBoolean('fault.afterHandling', fault.afterHandling);
  // the other kinds answer before or instead of the handler by what they are: the switch would be ignored
  if (fault.afterHandling !== undefined && !['status', 'reset', 'stall'].includes(fault.kind)) {
    throw new TypeError(`fault.afterHandling is for 'status', 'reset' and 'stall' faults (not '${fault.kind}')`);
  }
  if (fault.trickleMs !== undefined && (!Number.isInteger(fault.trickleMs) || fault.trickleMs < 0 || fault.kind !== 'trickle')) {
    throw new RangeError(`fault.trickleMs must be a whole number of ms, 0 or more, on a 'trickle' fault (not ${fault.trickleMs} on '${fault.kind}')`);
  }
  if (fault.retryAfterSeconds !== undefined && (!Number.isInteger(fault.retryAfterSeconds) || fault.retryAfterSeconds < 0)) {
    throw new RangeError(`fault.retryAfterSeconds must be a whole number of seconds, 0 or more (not ${fault.retryAfterSeconds})`);
  }
}

/** Switches of `setDeliveryFaults`: known keys, each of its type. */
export function assertDeliveryFaults(faults: SimulatorDeliveryFaults): void {
  if (typeof faults !== 'object' || faults === null) throw new TypeError('setDeliveryFaults: faults must be an object');
  for (const [key, value] of Object.entries(faults)) {
    if (value === undefined) continue;
    switch (key) {
      case 'duplicate':
        if (typeof value !== 'boolean' && !(Number.isInteger(value) && (value as number) >= 0)) {
          throw new RangeError(`setDeliveryFaults: duplicate must be true, false or a whole number of copies, 0 or more (not ${JSON.stringify(value)})`);
        }
        break;
      case 'concurrentDuplicates':
      case 'outOfOrder':
        if (typeof value !== 'boolean') throw new TypeError(`setDeliveryFaults: ${key} must be true or false (not ${JSON.stringify(value)})`);
        break;
      case 'wrongSecret':
        if (typeof value !== 'string' || value.length === 0) throw new TypeError('setDeliveryFaults: wrongSecret must be a non-empty string');
        break;
      default:
        throw new TypeError(`setDeliveryFaults: unknown switch ${JSON.stringify(key)}; known: duplicate, concurrentDuplicates, outOfOrder, wrongSecret`);
    }
  }
}

/** `sendEvent(merchantId, type, data)`: an event type such as `dispute.created` and an object of data. */
export function assertSendEventArguments(type: unknown, data: unknown): void {
  if (typeof type !== 'string' || type === '') throw new TypeError(`sendEvent: type must be an event type such as 'dispute.created' (not ${show(type)})`);
  if (!isRecord(data)) throw new TypeError(`sendEvent: data must be an object, the event's data (not ${show(data)})`);
}

/**
 * Whether a string fault path can match a request: a whole path from its leading `/`, without
 * a query, ids as they are sent (a `:trxId` or `{trxId}` placeholder is text no client sends),
 * and not only the end of one of the simulator's routes (`/refund`, `/create`), which is what a
 * RegExp is for. A path the simulator does not serve is allowed: a fault is taken before routing.
 */
function isFaultablePath(path: string): boolean {
  if (!path.startsWith('/') || /[?#{}]|\/:/.test(path)) return false;
  const base = BASE_PATHS.find(([prefix]) => path.startsWith(`${prefix}/`));
  const route = base === undefined ? path : path.slice(base[0].length);
  return !SIMULATOR_ROUTE_SHAPES.some((shape) => endsRouteShape(route, shape));
}

/**
 * Whether `route` is only the end of `shape` (`/trx_1/refund` of `/payment/{id}/refund`): fewer
 * segments, each the shape's (an `{id}` takes any), one of them a name the shape spells out (a
 * path that would be an id alone, `/disputes`, is a path of its own).
 */
function endsRouteShape(route: string, shape: string): boolean {
  const routeSegments = route.split('/').length - 1;
  const shapeSegments = shape.split('/').slice(1);
  if (routeSegments >= shapeSegments.length) return false;
  const tail = shapeSegments.slice(shapeSegments.length - routeSegments);
  return matchesPathTemplate(route, `/${tail.join('/')}`) && tail.some((segment) => segment !== '{id}');
}

/** A text argument of a control call (a failure reason, an idempotency key): a number would be stored as given. */
export function assertText(what: string, value: unknown): void {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${what} must be a non-empty string (not ${show(value)})`);
}

/** A switch left out, or `true`/`false`: a string such as `'false'` would be read as set. */
function assertOptionalBoolean(what: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`${what} must be true or false (not ${show(value)})`);
}

function assertKnownKeys(what: string, value: object, known: Record<string, true>): void {
  for (const key of Object.keys(value)) {
    if (!Object.hasOwn(known, key)) {
      const names = Object.keys(known);
      // a near spelling, else a known key this one begins (`retryAfter`), else the whole list
      const begun = key.length >= 5 ? names.find((name) => name.toLowerCase().startsWith(key.toLowerCase())) : undefined;
      const hint = likelyKey(key, names) || (begun === undefined ? `; known: ${names.join(', ')}` : `; did you mean '${begun}'?`);
      throw new TypeError(`${what} '${key}' is unknown${hint}`);
    }
  }
}

/** A value as an error message shows it: `Infinity`, `undefined` and a RegExp too, which JSON cannot. */
function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (value === null || typeof value !== 'object' || value instanceof RegExp) return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
