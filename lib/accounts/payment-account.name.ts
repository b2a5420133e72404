import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import { paymentEnvNames, paymentEnvPrefix } from '../config/payment-env.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';

/** Letters, digits, '.', '_' and '-', starting with a letter or digit: safe in env names, paths and store keys. */
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** `ACCOUNT_NAME` in words, for the messages that refuse a name. */
export const PAYMENT_ACCOUNT_NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit";

/** Whether `name` has the form of an account name (registered or not): no ':' or '/', so store keys and paths stay unambiguous. */
export function isPaymentAccountName(name: unknown): name is string {
  return typeof name === 'string' && ACCOUNT_NAME.test(name);
}

/** Throws a `PaymentConfigurationError` unless `name` is a usable account name. */
export function assertPaymentAccountName(name: unknown, where: string): asserts name is string {
  const problem = accountNameProblem(name, where);
  if (problem !== undefined) throw new PaymentConfigurationError([problem]);
}

function accountNameProblem(name: unknown, where: string): string | undefined {
  if (isPaymentAccountName(name)) return undefined;
  // only a string is shown: an object given by mistake (an account's whole settings) may hold its secrets
  const given = typeof name === 'string' ? JSON.stringify(name) : `of type ${name === null ? 'null' : typeof name}`;
  return `${where}: account ${given} must be a string of ${PAYMENT_ACCOUNT_NAME_RULE}`;
}

/**
 * What is wrong with the account name of a `forRoot()` / `forRootAsync()` call (`where`), if
 * anything: a name that is not one, or one that would read the default account's variables.
 */
export function paymentAccountNameProblems(account: unknown, where: string): string[] {
  if (account === undefined || account === DEFAULT_PAYMENT_ACCOUNT) return [];
  const problem = accountNameProblem(account, where);
  if (problem !== undefined) return [problem];
  // a second account beside the unnamed one, told apart from it by case alone (event.account, handlers' filters, logs)
  if ((account as string).toLowerCase() === DEFAULT_PAYMENT_ACCOUNT) {
    return [`${where}: account '${account as string}' is the default account's name in other letters: name it '${DEFAULT_PAYMENT_ACCOUNT}' (or leave it unnamed), or choose another name`];
  }
  return ownEnvPrefixProblems(account as string, where);
}

/**
 * The account of a `forRoot()` call: `'default'` when none is named, or when it is named
 * `'default'` (as every other API names the unnamed account, e.g. in a list of names).
 */
export function resolvePaymentAccountName(account: unknown, where = 'PaymentModule.forRoot()'): string {
  const problems = paymentAccountNameProblems(account, where);
  if (problems.length > 0) throw new PaymentConfigurationError(problems, typeof account === 'string' ? account : undefined);
  return (account as string | undefined) ?? DEFAULT_PAYMENT_ACCOUNT;
}

/**
 * An account whose `PAYMENT_<ACCOUNT>_` prefix starts a variable of the default account would
 * read it as its own: account `queue` would take `PAYMENT_QUEUE_REDIS_URL` for its `redisUrl`,
 * account `webhook` the default account's `PAYMENT_WEBHOOK_SECRET` for its secret.
 */
function ownEnvPrefixProblems(account: string, where: string): string[] {
  const prefix = paymentEnvPrefix(account);
  const taken = paymentEnvNames().filter((name) => name.startsWith(prefix));
  if (taken.length === 0) return [];
  return [`${where}: account '${account}' would read ${prefix}* variables, among them ${taken.join(', ')} of the default account: choose another name`];
}
