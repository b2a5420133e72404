import { REDACTED } from './redaction.util.js';

/** The message of anything thrown: `error.message` for an `Error`, else its text; without URL credentials. */
export function errorMessage(error: unknown): string {
  return withoutUrlCredentials(error instanceof Error ? error.message : textOf(error));
}

/** `Name: message` for an `Error` (the kind of failure shows in the log line), else its text; without URL credentials. */
export function describeError(error: unknown): string {
  return withoutUrlCredentials(error instanceof Error ? `${error.name}: ${error.message}` : textOf(error));
}

/**
 * `scheme://user:password@` of any URL (up to its last `@`: a password may hold an unescaped one).
 * Bounded: a scheme starts no run of scheme characters midway and is at most 32 long, user info at
 * most 512, so a long text (a handler's error) is scanned in linear time.
 */
const URL_CREDENTIALS = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]{0,31}:\/\/)[^\s/?#]{0,512}@/gi;

/**
 * `text` with the user and password of every URL in it replaced: a driver's error (a custom
 * store's, a Redis client's) may quote the URL it was given, which the module cannot know.
 */
export function withoutUrlCredentials(text: string): string {
  return text.includes('://') ? text.replace(URL_CREDENTIALS, `$1${REDACTED}@`) : text;
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
