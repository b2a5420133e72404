// Values that arrive with the quoting or JSON of the file they came from (an env file read by a
// tool that keeps quotes, a secrets manager's JSON): refused at boot, since they would become
// secrets with quotes or brackets in them and fail every call or delivery.

/** Whether `value` is text wrapped in one pair of matching quotes (`"x"`, `'x'`). */
export function isQuoted(value: unknown): boolean {
  return typeof value === 'string' && value.length >= 2 && /^(["']).*\1$/s.test(value);
}

/**
 * Whether webhook secrets were given as JSON (a list or object that parses as such) or quoted
 * (the whole value, or each listed one, wrapped in one pair of matching quotes: `"a,b"` split
 * would be `"a` and `b"`).
 */
export function looksLikeJsonOrQuoted(given: unknown, secrets: readonly unknown[]): boolean {
  if (typeof given === 'string') {
    const text = given.trim();
    if (isQuoted(text)) return true;
    if (/^\[.*\]$|^\{.*\}$/s.test(text)) {
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === 'object' && parsed !== null) return true;
      } catch {
        // not JSON: secrets that happen to start and end with brackets
      }
    }
  }
  return secrets.some(isQuoted);
}
