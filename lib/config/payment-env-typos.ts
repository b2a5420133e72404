import { likelyKey } from '../common/likely-key.util.js';
import { PAYMENT_ENV_VARIABLES, paymentEnvNames } from './payment-env.js';

/** The part after `PAYMENT_` of each variable (`BASE_URL`), longest first: `QUEUE_REDIS_URL` before `REDIS_URL`. */
const SETTING_NAMES = Object.values(PAYMENT_ENV_VARIABLES)
  .map((name) => name.slice('PAYMENT_'.length))
  .sort((a, b) => b.length - a.length);

/**
 * Lines about variables among `names` that look meant for the module but that no account of
 * `accounts` reads: a misspelt one leaves its setting at the default without a word (a live account
 * left in sandbox ignores every real event; a webhook secret never read answers 404). Reported:
 * a variable whose setting part is one of the module's, under a prefix no registered account has
 * (`PAYMENT_UK_BASE_URL` without an account 'uk'), and one within two edits of a variable the
 * module reads. Other `PAYMENT_*` variables may be the app's own and are left alone.
 */
export function unreadPaymentVariables(names: Iterable<string>, accounts: readonly string[]): string[] {
  const read = new Set([...paymentEnvNames(), ...accounts.flatMap((account) => paymentEnvNames(account))]);
  const readList = [...read];
  const lines: string[] = [];
  for (const name of names) {
    if (!name.startsWith('PAYMENT_') || read.has(name)) continue;
    const setting = SETTING_NAMES.find((part) => name.endsWith(`_${part}`) && name.length > `PAYMENT__${part}`.length);
    if (setting !== undefined) {
      const prefix = name.slice(0, name.length - setting.length);
      lines.push(
        `Environment variable ${name} is not read: no PaymentModule.forRoot() registers an account whose variables start with ${prefix} ` +
          `(registered: ${accounts.join(', ')})`,
      );
      continue;
    }
    const hint = likelyKey(name, readList);
    if (hint !== '') lines.push(`Environment variable ${name} is not one nestjs-payment-gateway reads${hint}`);
  }
  return lines;
}
