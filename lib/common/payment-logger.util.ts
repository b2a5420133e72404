import { Logger } from '@nestjs/common';

/**
 * What a log line must not carry as it is: control characters (a newline starts a forged line, an
 * ANSI escape rewrites an operator's terminal), line and paragraph separators, and bidirectional
 * marks and overrides (which reorder what is shown).
 */
const UNPRINTABLE = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/** `text` with each character of `UNPRINTABLE` written as `\uXXXX`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const printableMessage = (message: unknown): unknown => (typeof message === 'string' ? printable(message) : message);

/**
 * The logger of the module's delivery path: each message's unprintable characters are escaped, so
 * text a sender signed (an `eventId` of `evt\n[Nest] ... LOG forged`, terminal escapes) can neither
 * forge a line nor rewrite a terminal. Anything passed beside the message (`error`'s stack trace,
 * the context) is left as it is.
 */
export class PaymentLogger extends Logger {
  override log(message: unknown, ...rest: unknown[]): void {
    super.log(printableMessage(message), ...rest);
  }

  override error(message: unknown, ...rest: unknown[]): void {
    super.error(printableMessage(message), ...rest);
  }

  override warn(message: unknown, ...rest: unknown[]): void {
    super.warn(printableMessage(message), ...rest);
  }

  override debug(message: unknown, ...rest: unknown[]): void {
    super.debug(printableMessage(message), ...rest);
  }

  override verbose(message: unknown, ...rest: unknown[]): void {
    super.verbose(printableMessage(message), ...rest);
  }

  override fatal(message: unknown, ...rest: unknown[]): void {
    super.fatal(printableMessage(message), ...rest);
  }
}
