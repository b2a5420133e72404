import { likelyKey } from '../common/likely-key.util.js';
import { paymentEnvNames } from './payment-env.js';

/**
 * Lines about variables among `names` that are within two letters of a variable some account of
 * `accounts` reads, but that none reads: a misspelt name leaves its setting at the default without
 * a word (a live account left in sandbox ignores every real event; a webhook secret never read
 * answers 404), and the environment, shared with the rest of the app, cannot be refused the way an
 * unknown option is. Anything further off is taken for the app's own (`PAYMENT_STRIPE_WEBHOOK_SECRET`,
 * a `PAYMENT_SANDBOX_CLIENT_ID` a factory picks from) and left alone.
 */
export function unreadPaymentVariables(names: Iterable<string>, accounts: readonly string[]): string[] {
  const read = new Set([...paymentEnvNames(), ...accounts.flatMap((account) => paymentEnvNames(account))]);
  const readList = [...read];
  const lines: string[] = [];
  for (const name of names) {
    if (!name.startsWith('PAYMENT_') || read.has(name)) continue;
    const hint = likelyKey(name, readList);
    if (hint !== '') lines.push(`Environment variable ${name} is not one nestjs-payment-gateway reads (accounts: ${accounts.join(', ')})${hint}`);
  }
  return lines;
}
