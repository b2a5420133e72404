import { unreadPaymentVariables } from '../../lib/config/payment-env-typos.js';

describe('PAYMENT_* variables no account reads', () => {
  const accounts = ['default', 'eu', 'us'];

  it('names a misspelt variable with the one it most likely meant', () => {
    expect(unreadPaymentVariables(['PAYMENT_EU_WEBHOOK_SECRETS', 'PAYMENT_US_ENVIROMENT', 'PAYMENT_PROCESING'], accounts)).toEqual([
      "Environment variable PAYMENT_EU_WEBHOOK_SECRETS is not one nestjs-payment-gateway reads; did you mean 'PAYMENT_EU_WEBHOOK_SECRET'?",
      "Environment variable PAYMENT_US_ENVIROMENT is not one nestjs-payment-gateway reads; did you mean 'PAYMENT_US_ENVIRONMENT'?",
      "Environment variable PAYMENT_PROCESING is not one nestjs-payment-gateway reads; did you mean 'PAYMENT_PROCESSING'?",
    ]);
  });

  it('names a setting of an account no forRoot() registers, with the accounts that are', () => {
    expect(unreadPaymentVariables(['PAYMENT_UK_BASE_URL', 'PAYMENT_UK_QUEUE_REDIS_URL'], accounts)).toEqual([
      'Environment variable PAYMENT_UK_BASE_URL is not read: no PaymentModule.forRoot() registers an account whose variables start with PAYMENT_UK_ (registered: default, eu, us)',
      'Environment variable PAYMENT_UK_QUEUE_REDIS_URL is not read: no PaymentModule.forRoot() registers an account whose variables start with PAYMENT_UK_ (registered: default, eu, us)',
    ]);
  });

  it("leaves alone the variables it reads, the app's own PAYMENT_* variables and everything else", () => {
    const names = ['PAYMENT_BASE_URL', 'PAYMENT_EU_CLIENT_ID', 'PAYMENT_US_QUEUE_REDIS_URL', 'PAYMENT_QUEUE_WORKER', 'PAYMENT_SUCCESS_PAGE', 'PAYMENTS_ENABLED', 'HOME', 'PATH'];
    expect(unreadPaymentVariables(names, accounts)).toEqual([]);
    // a named account's shared settings may come from the unprefixed variables: read even without a default account
    expect(unreadPaymentVariables(['PAYMENT_REDIS_URL', 'PAYMENT_PROCESSING'], ['eu'])).toEqual([]);
  });
});
