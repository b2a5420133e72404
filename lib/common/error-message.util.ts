/** The message of anything thrown: `error.message` for an `Error`, else its text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
