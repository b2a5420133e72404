/** Exact decimal money helpers: amounts stay strings / bigint units, never floats. */

const SCALE = 8;
const UNIT = 10n ** BigInt(SCALE);
const AMOUNT_RE = /^\d{1,12}(\.\d{1,8})?$/;

export function isAmount(value: unknown): value is string {
  return typeof value === 'string' && AMOUNT_RE.test(value);
}

/** '12.5' → 1250000000n. Throws on anything that is not a plain non-negative decimal. */
export function toUnits(amount: string): bigint {
  const text = amount.trim();
  if (!AMOUNT_RE.test(text)) throw new RangeError(`Not an amount: ${JSON.stringify(amount)}`);
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole) * UNIT + BigInt(fraction.padEnd(SCALE, '0'));
}

/** 1250000000n → '12.50000000' (the service's format, spec 2.2). */
export function fromUnits(units: bigint): string {
  const whole = units / UNIT;
  const fraction = (units % UNIT).toString().padStart(SCALE, '0');
  return `${whole}.${fraction}`;
}

/** Same amount, whatever the number of decimals ('10.5' and '10.50000000'). */
export function sameAmount(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  try {
    return toUnits(a) === toUnits(b);
  } catch {
    return false;
  }
}
