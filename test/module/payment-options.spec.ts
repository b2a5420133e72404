import { inspect } from 'node:util';
import { PaymentConfigurationError, resolvePaymentOptions } from '../../lib/config/payment-options.validation.js';
import { readPaymentEnv } from '../../lib/config/payment-env.js';

const SECRET = 'cs_live_do_not_print_me';
const WEBHOOK_SECRET = 'whsec_do_not_print_me';

function captureError(fn: () => unknown): PaymentConfigurationError {
  try {
    fn();
  } catch (error) {
    if (error instanceof PaymentConfigurationError) return error;
    throw error;
  }
  throw new Error('expected a PaymentConfigurationError');
}

describe('resolvePaymentOptions', () => {
  it('reads PAYMENT_* variables and applies the documented defaults', () => {
    const env = readPaymentEnv((name) =>
      ({
        PAYMENT_BASE_URL: 'https://pay.example.com/',
        PAYMENT_CLIENT_ID: 'id',
        PAYMENT_CLIENT_SECRET: SECRET,
        PAYMENT_WEBHOOK_SECRET: ' whsec_a , whsec_b ',
        PAYMENT_MAX_RETRIES: '5',
        PAYMENT_RECONCILE: 'true',
      })[name],
    );
    const options = resolvePaymentOptions({}, env);
    expect(options).toMatchObject({
      baseUrl: 'https://pay.example.com',
      environment: 'sandbox',
      apiBaseUrl: 'https://pay.example.com/sandbox/api/v1',
      clientId: 'id',
      clientSecret: SECRET,
      webhookSecrets: ['whsec_a', 'whsec_b'],
      webhookPath: 'payments/webhook',
      webhookToleranceSeconds: 300,
      webhookMaxBodyBytes: 1048576,
      maxRetries: 5,
      reconcile: true,
      webhookRetentionMs: 7 * 24 * 3600 * 1000,
    });
    expect(options.endpoints.paymentStatusParam).toBe('trx_id');
    expect(options.tokenResponse.defaultExpiresInSeconds).toBe(600);
    expect(options.rateLimits).toEqual({
      tokenPerMinute: 10,
      createPaymentPerMinute: 30,
      readsPerMinute: 60,
      moneyMovementPerMinute: 30,
    });
  });

  it('picks the live base path and lets explicit options win over the environment', () => {
    const options = resolvePaymentOptions(
      { environment: 'live', webhookPath: '/hooks/pay/', maxRetries: 0, endpoints: { refundLookup: '/refunds/{refund_uid}' } },
      { baseUrl: 'http://127.0.0.1:9', environment: 'sandbox', maxRetries: '7' },
    );
    expect(options.apiBaseUrl).toBe('http://127.0.0.1:9/api/v1');
    expect(options.webhookPath).toBe('hooks/pay');
    expect(options.maxRetries).toBe(0);
    expect(options.endpoints.refundLookup).toBe('/refunds/{refund_uid}');
    expect(options.endpoints.payoutLookup).toBe('/payout/{payout_uid}');
  });

  it('names every bad key in one error and never prints a secret', () => {
    const error = captureError(() =>
      resolvePaymentOptions(
        { clientSecret: SECRET, webhookSecret: [WEBHOOK_SECRET, ''] },
        { environment: 'production', httpTimeoutMs: 'soon', webhookToleranceSeconds: '-4', reconcile: 'maybe' },
      ),
    );
    const text = `${error.message}\n${JSON.stringify(error)}\n${inspect(error)}`;
    expect(error.code).toBe('PAYMENT_INVALID_CONFIGURATION');
    expect(error.problems).toHaveLength(7);
    expect(error.message).toContain('PAYMENT_BASE_URL');
    expect(error.message).toContain('is required');
    expect(error.message).toContain("PAYMENT_ENVIRONMENT (option 'environment') must be 'sandbox' or 'live'");
    expect(error.message).toContain('PAYMENT_HTTP_TIMEOUT_MS');
    expect(error.message).toContain('PAYMENT_WEBHOOK_TOLERANCE_SECONDS');
    expect(error.message).toContain('PAYMENT_RECONCILE');
    expect(error.message).toContain("option 'clientId'");
    expect(error.message).toContain("option 'webhookSecret'");
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(WEBHOOK_SECRET);
  });

  it('rejects unknown endpoint keys and malformed nested options', () => {
    const error = captureError(() =>
      resolvePaymentOptions({
        baseUrl: 'https://pay.example.com',
        endpoints: { refund: 'payment/refund', nope: '/x' } as never,
        rateLimits: { readsPerMinute: -1 },
        redisUrl: 'localhost:6379',
      }),
    );
    expect(error.problems.join('\n')).toMatch(/endpoints\.refund' must be a path/);
    expect(error.problems.join('\n')).toMatch(/endpoints\.nope' is unknown/);
    expect(error.problems.join('\n')).toMatch(/rateLimits\.readsPerMinute/);
    expect(error.problems.join('\n')).toMatch(/PAYMENT_REDIS_URL/);
  });

  it('keeps secrets out of JSON and inspect output of the resolved options', () => {
    const options = resolvePaymentOptions({
      baseUrl: 'https://pay.example.com',
      clientId: 'id',
      clientSecret: SECRET,
      webhookSecret: WEBHOOK_SECRET,
      redisUrl: 'redis://user:hunter2@127.0.0.1:6379',
    });
    expect(options.clientSecret).toBe(SECRET);
    expect(options.webhookSecrets).toEqual([WEBHOOK_SECRET]);
    for (const text of [JSON.stringify(options), inspect(options, { depth: 5 })]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(WEBHOOK_SECRET);
      expect(text).not.toContain('hunter2');
      expect(text).toContain('[redacted]');
    }
  });
});
