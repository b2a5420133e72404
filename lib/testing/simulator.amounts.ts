/**
 * Money in the simulator is held as bigint units of 1e-8 so sums and balances are
 * exact; the wire always carries numeric strings with 8 decimals.
 */
// at most 18 integer digits, as the module's client sends (the spec shows no bounds)
const AMOUNT_PATTERN = /^(0|[1-9]\d{0,17})(?:\.(\d{1,8}))?$/;
const SCALE = 100_000_000n;

/** Units of 1e-8, or `undefined` when `value` is not a plain non-negative numeric string. */
export function parseAmount(value: unknown): bigint | undefined {
  if (typeof value !== 'string') return undefined;
  const m = AMOUNT_PATTERN.exec(value);
  if (!m) return undefined;
  const frac = (m[2] ?? '').padEnd(8, '0');
  return BigInt(m[1]) * SCALE + BigInt(frac);
}

/** `'12.50000000'` from units. */
export function formatAmount(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  const whole = abs / SCALE;
  const frac = (abs % SCALE).toString().padStart(8, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

/** Normalises a numeric string to 8 decimals; throws on anything else (used for trusted configuration). */
export function normaliseAmount(value: string): string {
  const units = parseAmount(value);
  if (units === undefined) throw new TypeError(`Not a numeric amount string: ${JSON.stringify(value)}`);
  return formatAmount(units);
}
