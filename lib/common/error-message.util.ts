/** The message of anything thrown: `error.message` for an `Error`, else its text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `Name: message` for an `Error` (the kind of failure shows in the log line), else its text. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
