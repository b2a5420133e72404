/** The message of anything thrown: `error.message` for an `Error`, else its text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : textOf(error);
}

/** `Name: message` for an `Error` (the kind of failure shows in the log line), else its text. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : textOf(error);
}

/**
 * `String(value)`, except for values that cannot become text (an object without a prototype,
 * a `toString` that throws): reporting a failure must not fail in turn.
 */
function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return `[${Object.prototype.toString.call(value).slice(8, -1)} that cannot be shown as text]`;
  }
}
