import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import { paymentEnvNames, paymentEnvPrefix } from '../config/payment-env.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';

/** Letters, digits, '.', '_' and '-', starting with a letter or digit: safe in env names, paths and store keys. */
const ACCOUNT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Throws a `PaymentConfigurationError` unless `name` is a usable account name. */
export function assertPaymentAccountName(name: unknown, where: string): asserts name is string {
  if (typeof name !== 'string' || !ACCOUNT_NAME.test(name)) {
    throw new PaymentConfigurationError([
      `${where}: account ${JSON.stringify(name) ?? String(name)} must be 1-64 letters, digits, '.', '_' or '-', ` +
        'starting with a letter or digit',
    ]);
  }
}

/**
 * The account of a `forRoot()` call: `'default'` when none is named, or when it is named
 * `'default'` (as every other API names the unnamed account, e.g. in a list of names).
 */
export function resolvePaymentAccountName(account: unknown): string {
  if (account === undefined || account === DEFAULT_PAYMENT_ACCOUNT) return DEFAULT_PAYMENT_ACCOUNT;
  assertPaymentAccountName(account, 'PaymentModule.forRoot()');
  assertOwnEnvPrefix(account);
  return account;
}

/**
 * An account whose `PAYMENT_<ACCOUNT>_` prefix starts a variable of the default account would
 * read it as its own: account `queue` would take `PAYMENT_QUEUE_REDIS_URL` for its `redisUrl`,
 * account `webhook` the default account's `PAYMENT_WEBHOOK_SECRET` for its secret.
 */
function assertOwnEnvPrefix(account: string): void {
  const prefix = paymentEnvPrefix(account);
  const taken = paymentEnvNames().filter((name) => name.startsWith(prefix));
  if (taken.length === 0) return;
  throw new PaymentConfigurationError(
    [`PaymentModule.forRoot(): account '${account}' would read ${prefix}* variables, among them ${taken.join(', ')} of the default account: choose another name`],
    account,
  );
}
