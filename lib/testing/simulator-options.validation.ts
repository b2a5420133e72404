import { PAYMENT_OUTCOMES, type PaymentServiceSimulatorOptions, type SimulatorFault } from './simulator.types.js';

/*
 * The simulator exists to catch mistakes in the apps tested against it: a typo in its own
 * options or control calls must fail loudly, not silently switch a limit off or settle a
 * payment in a state the service never reports.
 */

const RATE_LIMIT_KEYS = ['tokenPerMinute', 'createPaymentPerMinute', 'readsPerMinute', 'moneyMovementPerMinute'];
const MODES = ['sandbox', 'live'];
const FAULT_KINDS = ['status', 'reset', 'stall', 'rewrite'];

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
}
