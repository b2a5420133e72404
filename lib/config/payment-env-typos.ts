import { likelyKey } from '../common/likely-key.util.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { paymentEnvName, paymentEnvNames, paymentEnvPrefix, type PaymentEnvOptionKey, sharedPaymentEnvNames } from './payment-env.js';

/**
 * Lines about variables among `names` that are within two letters of a variable some account of
 * `accounts` reads, but that none reads: a misspelt name leaves its setting at the default without
 * a word (a live account left in sandbox ignores every real event; a webhook secret never read
 * answers 404), and the environment, shared with the rest of the app, cannot be refused the way an
 * unknown option is. Anything further off is taken for the app's own (`PAYMENT_STRIPE_WEBHOOK_SECRET`,
 * a `PAYMENT_SANDBOX_CLIENT_ID` a factory picks from) and left alone.
 */
export function unreadPaymentVariables(names: Iterable<string>, accounts: readonly string[]): UnreadPaymentVariable[] {
  // without a default account, its own variables (credentials, secret, path) are read by nobody: only the shared ones are
  const defaultRegistered = accounts.includes(DEFAULT_PAYMENT_ACCOUNT);
  const defaultNames = paymentEnvNames();
  const read = new Set([...(defaultRegistered ? defaultNames : sharedPaymentEnvNames()), ...accounts.flatMap((account) => paymentEnvNames(account))]);
  const readList = [...read];
  const found: UnreadPaymentVariable[] = [];
  for (const name of names) {
    if (!name.startsWith('PAYMENT_') || read.has(name)) continue;
    if (!defaultRegistered && defaultNames.includes(name)) {
      const named = accounts.map((account) => `${paymentEnvPrefix(account)}${name.slice('PAYMENT_'.length)}`).join(' or ');
      found.push({ variable: name, message: `Environment variable ${name} is the default account's, and no PaymentModule.forRoot() without an account is registered (accounts: ${accounts.join(', ')}): a named account reads ${named}` });
      continue;
    }
    const hint = misspellingHint(name, readList);
    if (hint === '') continue;
    // a whole variable of an account not registered yet (one loaded later): renaming it would hand its setting to another account
    const prefix = otherAccountPrefix(name);
    const unlessLate = prefix === undefined ? '' : ` Unless it is for an account registered after start (LazyModuleLoader) whose variables start with ${prefix}: then keep it`;
    found.push({ variable: name, message: `Environment variable ${name} is not one nestjs-payment-gateway reads (accounts: ${accounts.join(', ')})${hint}${unlessLate}` });
  }
  return found;
}

/** `; did you mean '<known>'?` for the variable of `known` that `name` most likely misspells, else ''. */
function misspellingHint(name: string, known: readonly string[]): string {
  return likelyKey(name, known) || unitDroppedFrom(name, known);
}

const UNIT_SUFFIX = /_(MS|SECONDS|BYTES)$/;

/**
 * `; did you mean '<known>'?` when `name` is a known variable without its unit (`PAYMENT_HTTP_TIMEOUT`
 * for `PAYMENT_HTTP_TIMEOUT_MS`): three letters or more off, but a likely slip all the same.
 */
function unitDroppedFrom(name: string, known: readonly string[]): string {
  const meant = known.find((candidate) => UNIT_SUFFIX.exec(candidate)?.index === name.length && candidate.startsWith(name));
  return meant === undefined ? '' : `; did you mean '${meant}'?`;
}

/**
 * `; <variable> is set: a misspelling of <the variable of option>?` for each set variable that looks
 * like `option`'s variable of `account` (what `unreadPaymentVariables` would name), else ''. For the
 * start-up error of a required setting: that error comes before the warning about unread variables.
 */
export function misspeltVariableHint(option: PaymentEnvOptionKey, account: string, names: Iterable<string> = Object.keys(process.env)): string {
  const variable = paymentEnvName(option, account);
  const known = paymentEnvNames();
  const misspelt = [...names].filter(
    (name) =>
      name.startsWith('PAYMENT_') &&
      name !== variable &&
      !known.includes(name) &&
      otherAccountPrefix(name) === undefined &&
      misspellingHint(name, [variable]) !== '',
  );
  return misspelt.map((name) => `; ${name} is set: a misspelling of ${variable}?`).join('');
}

/** A variable no account registered at start reads, and the line that says so. */
export interface UnreadPaymentVariable {
  variable: string;
  message: string;
}

/**
 * The default account's variables without `PAYMENT_`: what a named account's prefix is followed by.
 * Longest first: `PAYMENT_US_QUEUE_REDIS_URL` is account us's `QUEUE_REDIS_URL`, not a `REDIS_URL`.
 */
const OPTION_SUFFIXES = paymentEnvNames()
  .map((name) => name.slice('PAYMENT_'.length))
  .sort((a, b) => b.length - a.length);

/** `PAYMENT_US_` when `name` is exactly a variable of some account (`PAYMENT_US_WEBHOOK_SECRET`), else `undefined`. */
function otherAccountPrefix(name: string): string | undefined {
  const suffix = OPTION_SUFFIXES.find((option) => name.endsWith(`_${option}`));
  const prefix = suffix === undefined ? undefined : name.slice(0, name.length - suffix.length);
  return prefix !== undefined && /^PAYMENT_[A-Z0-9][A-Z0-9_]*_$/.test(prefix) ? prefix : undefined;
}
