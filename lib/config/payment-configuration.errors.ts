import { inspect } from 'node:util';
import { PaymentMessages } from '../payment.messages.js';

/**
 * Thrown at boot when the module's configuration is missing or malformed. Names every bad
 * key (and the account it belongs to); never holds a secret value.
 * @publicApi
 */
export class PaymentConfigurationError extends Error {
  override readonly name = 'PaymentConfigurationError';
  readonly code = 'PAYMENT_INVALID_CONFIGURATION';

  constructor(
    readonly problems: string[],
    /** The account whose configuration is at fault; `undefined` when the problem is not one account's. */
    readonly account?: string,
  ) {
    super(PaymentMessages.invalidConfiguration(problems, account));
  }

  /** The message (which lists every problem) and the stack, once: not again as `problems`, `account`, `code` fields in a boot log. */
  [inspect.custom](): string {
    return this.stack ?? `${this.name}: ${this.message}`;
  }
}
