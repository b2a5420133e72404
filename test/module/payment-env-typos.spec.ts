import { unreadPaymentVariables } from '../../lib/config/payment-env-typos.js';

describe('PAYMENT_* variables no account reads', () => {
  const accounts = ['default', 'eu', 'us'];
  const line = (name: string, meant: string, lateAccountPrefix?: string) =>
    `Environment variable ${name} is not one nestjs-payment-gateway reads (accounts: default, eu, us); did you mean '${meant}'?` +
    (lateAccountPrefix === undefined ? '' : ` Unless it is for an account registered after start (LazyModuleLoader) whose variables start with ${lateAccountPrefix}: then keep it`);
  const messages = (names: string[], registered = accounts) => unreadPaymentVariables(names, registered).map(({ message }) => message);

  it('names a misspelt variable with the one it most likely meant', () => {
    expect(messages(['PAYMENT_EU_WEBHOOK_SECRETS', 'PAYMENT_US_ENVIROMENT', 'PAYMENT_PROCESING'])).toEqual([
      line('PAYMENT_EU_WEBHOOK_SECRETS', 'PAYMENT_EU_WEBHOOK_SECRET'),
      line('PAYMENT_US_ENVIROMENT', 'PAYMENT_US_ENVIRONMENT'),
      line('PAYMENT_PROCESING', 'PAYMENT_PROCESSING'),
    ]);
  });

  it("names a setting whose account prefix is within two letters of a registered one, and that it may be a later account's", () => {
    // account 'uk' may be loaded after start (LazyModuleLoader): renaming its variable to us's would give us its setting
    expect(messages(['PAYMENT_UK_BASE_URL'])).toEqual([line('PAYMENT_UK_BASE_URL', 'PAYMENT_US_BASE_URL', 'PAYMENT_UK_')]);
    expect(unreadPaymentVariables(['PAYMENT_UK_BASE_URL'], accounts).map(({ variable }) => variable)).toEqual(['PAYMENT_UK_BASE_URL']);
    // read as the longest option name it ends with: account us's QUEUE_REDIS_URL, not an account 'us_queue''s REDIS_URL
    expect(messages(['PAYMENT_US_QUEUE_REDIS_URL'], ['default', 'eu'])).toEqual([
      line('PAYMENT_US_QUEUE_REDIS_URL', 'PAYMENT_EU_QUEUE_REDIS_URL', 'PAYMENT_US_').replace('default, eu, us', 'default, eu'),
    ]);
  });

  it("with named accounts only, names the default account's own variables as read by nobody, and hints at no name nobody reads", () => {
    expect(messages(['PAYMENT_WEBHOOK_SECRET', 'PAYMENT_CLIENT_ID', 'PAYMENT_REDIS_URL', 'PAYMENT_WEBHOK_SECRET', 'PAYMENT_EU_WEBHOOK_SECRET'], ['eu', 'us'])).toEqual([
      "Environment variable PAYMENT_WEBHOOK_SECRET is the default account's, and no PaymentModule.forRoot() without an account is registered (accounts: eu, us): " +
        'a named account reads PAYMENT_EU_WEBHOOK_SECRET or PAYMENT_US_WEBHOOK_SECRET',
      "Environment variable PAYMENT_CLIENT_ID is the default account's, and no PaymentModule.forRoot() without an account is registered (accounts: eu, us): " +
        'a named account reads PAYMENT_EU_CLIENT_ID or PAYMENT_US_CLIENT_ID',
    ]);
  });

  it('names a variable that lacks only its unit (three letters or more off)', () => {
    expect(messages(['PAYMENT_HTTP_TIMEOUT', 'PAYMENT_EU_WEBHOOK_TOLERANCE', 'PAYMENT_WEBHOOK_MAX_BODY'])).toEqual([
      line('PAYMENT_HTTP_TIMEOUT', 'PAYMENT_HTTP_TIMEOUT_MS'),
      line('PAYMENT_EU_WEBHOOK_TOLERANCE', 'PAYMENT_EU_WEBHOOK_TOLERANCE_SECONDS'),
      line('PAYMENT_WEBHOOK_MAX_BODY', 'PAYMENT_WEBHOOK_MAX_BODY_BYTES'),
    ]);
  });

  it('names the nearest variable, not the first within two letters', () => {
    // PAYMENT_BASE_URL is two edits away and listed first; PAYMENT_US_BASE_URL is one
    expect(messages(['PAYMENT_U_BASE_URL'], ['default', 'us'])).toEqual([
      line('PAYMENT_U_BASE_URL', 'PAYMENT_US_BASE_URL', 'PAYMENT_U_').replace('default, eu, us', 'default, us'),
    ]);
  });

  it("leaves alone the variables it reads, the app's own PAYMENT_* variables and everything else", () => {
    const names = [
      'PAYMENT_BASE_URL',
      'PAYMENT_EU_CLIENT_ID',
      'PAYMENT_US_QUEUE_REDIS_URL',
      'PAYMENT_QUEUE_WORKER',
      // the app's own: other services, or both sets of credentials a forRootAsync factory picks from
      'PAYMENT_SANDBOX_CLIENT_ID',
      'PAYMENT_LIVE_CLIENT_SECRET',
      'PAYMENT_STRIPE_WEBHOOK_SECRET',
      'PAYMENT_SERVICE_BASE_URL',
      'PAYMENT_FRONTEND_BASE_URL',
      'PAYMENT_CACHE_REDIS_URL',
      'PAYMENT_SUCCESS_PAGE',
      'PAYMENTS_ENABLED',
      'HOME',
    ];
    expect(messages(names)).toEqual([]);
    // a named account's shared settings may come from the unprefixed variables: read even without a default account
    expect(messages(['PAYMENT_REDIS_URL', 'PAYMENT_PROCESSING'], ['eu'])).toEqual([]);
  });
});
