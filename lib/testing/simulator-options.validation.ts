import { PAYMENT_OUTCOMES, type PaymentServiceSimulatorOptions, type SimulatorDeliveryFaults, type SimulatorFault } from './simulator.types.js';

const HTTP_METHODS: readonly string[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/*
 * The simulator exists to catch mistakes in the apps tested against it: a typo in its own
 * options or control calls must fail loudly, not silently switch a limit off or settle a
 * payment in a state the service never reports.
 */

const RATE_LIMIT_KEYS = ['tokenPerMinute', 'createPaymentPerMinute', 'readsPerMinute', 'moneyMovementPerMinute'];
const MODES = ['sandbox', 'live'];
const FAULT_KINDS = ['status', 'reset', 'stall', 'rewrite', 'trickle'];

/** Throws a `TypeError` naming the first bad constructor option. */
export function assertSimulatorOptions(options: PaymentServiceSimulatorOptions): void {
  const limits = options.rateLimits;
  if (limits !== undefined && typeof limits !== 'boolean') {
    for (const [key, value] of Object.entries(limits)) {
      if (value === undefined) continue;
      if (!RATE_LIMIT_KEYS.includes(key)) throw new TypeError(`rateLimits.${key} is unknown; known: ${RATE_LIMIT_KEYS.join(', ')}`);
      if (!Number.isInteger(value) || (value as number) < 1) {
        throw new TypeError(`rateLimits.${key} must be a whole number of requests per minute, at least 1 (leave it out for the spec's value)`);
      }
    }
  }
  if (options.defaultOutcome !== undefined && !PAYMENT_OUTCOMES.includes(options.defaultOutcome)) {
    throw new TypeError(`defaultOutcome ${JSON.stringify(options.defaultOutcome)} is unknown; known: ${PAYMENT_OUTCOMES.join(', ')}`);
  }
  for (const merchant of options.merchants ?? []) {
    if (!MODES.includes(merchant.mode)) {
      throw new TypeError(`merchant ${merchant.merchantId}: mode must be 'sandbox' or 'live' (not ${JSON.stringify(merchant.mode)})`);
    }
    if (merchant.webhookUrl !== undefined) assertWebhookUrl(merchant.webhookUrl);
  }
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

/** A fault the simulator can answer with: a known kind, and for `status` an error status. */
export function assertFault(fault: SimulatorFault): void {
  if (!FAULT_KINDS.includes(fault?.kind)) throw new TypeError(`fault.kind ${JSON.stringify(fault?.kind)} is unknown; known: ${FAULT_KINDS.join(', ')}`);
  if (fault.status !== undefined && (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599)) {
    throw new RangeError(`fault.status must be an error status from 400 to 599 (not ${fault.status})`);
  }
  // requests are matched on the upper-case method: 'get' would never match
  if (fault.method !== undefined && !HTTP_METHODS.includes(fault.method)) {
    throw new TypeError(`fault.method ${JSON.stringify(fault.method)} is unknown; known: ${HTTP_METHODS.join(', ')}`);
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
