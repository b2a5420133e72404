import { inspect } from 'node:util';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { readPaymentEnv } from '../../lib/config/payment-env.js';
import { redactRedisUrl } from '../../lib/config/redact-url.js';

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
      webhookShutdownTimeoutMs: 10_000,
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

  it.each([
    ['0', { readsPerMinute: 0 }, 'readsPerMinute'],
    ['a negative limit', { moneyMovementPerMinute: -3 }, 'moneyMovementPerMinute'],
    ['a fraction', { tokenPerMinute: 0.5 }, 'tokenPerMinute'],
    ['NaN', { createPaymentPerMinute: Number.NaN }, 'createPaymentPerMinute'],
    ['a string', { readsPerMinute: '60' }, 'readsPerMinute'],
    ['an unknown key', { refundsPerMinute: 30 }, 'refundsPerMinute'],
  ])('a rate limit of %s is a boot error naming the key, not a queue that never drains', (_label, rateLimits, key) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', rateLimits: rateLimits as never }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(`rateLimits.${key}`);
  });

  it('an explicit null counts as not given: the environment still applies and the pair rules still hold', () => {
    const fromEnv = resolvePaymentOptions({ clientId: null, clientSecret: null } as never, {
      baseUrl: 'https://pay.example.com',
      clientId: 'env-client',
      clientSecret: SECRET,
    });
    expect(fromEnv.clientId).toBe('env-client');
    expect(fromEnv.clientSecret).toBe(SECRET);
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', clientId: 'id', clientSecret: null } as never));
    expect(error.problems).toEqual([expect.stringContaining("PAYMENT_CLIENT_SECRET (option 'clientSecret') is required when clientId is set")]);
  });

  it.each([
    ['a lifetime of 0 (a token per call)', { defaultExpiresInSeconds: 0 }, 'defaultExpiresInSeconds'],
    ['no token field', { tokenFields: [] }, 'tokenFields'],
    ['a blank token field', { tokenFields: ['access_token', ''] }, 'tokenFields'],
    ['a lifetime field that is not a name', { expiresInField: 3600 }, 'expiresInField'],
    ['a negative margin', { refreshMarginSeconds: -1 }, 'refreshMarginSeconds'],
    ['a maximum lifetime of 0', { maxExpiresInSeconds: 0 }, 'maxExpiresInSeconds'],
    ['an unknown key', { expiresIn: 600 }, 'expiresIn'],
  ])('tokenResponse with %s is a boot error naming the key', (_label, tokenResponse, key) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', tokenResponse: tokenResponse as never }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(`tokenResponse.${key}`);
  });

  it.each([
    ['a refund path without its payment id (every refund would miss it)', { refund: '/payment/{trxId}/refund' }, 'refund', '{trx_id}'],
    ['a lookup path without a placeholder', { payoutLookup: '/payout' }, 'payoutLookup', '{payout_uid}'],
    ['a placeholder twice', { refundLookup: '/refund/{refund_uid}/{refund_uid}' }, 'refundLookup', '{refund_uid}'],
    ['a placeholder where no id goes', { payout: '/payout/{payout_uid}' }, 'payout', 'no placeholder'],
    ['a //host path (leaves the API base)', { token: '//evil.test/x' }, 'token', "without '//'"],
    ['an encoded dot segment', { gateways: '/a/%2e%2e/b' }, 'gateways', 'dot segments'],
    ['an empty status parameter', { paymentStatusParam: '' }, 'paymentStatusParam', 'query parameter name'],
  ])('endpoints with %s is a boot error naming the key', (_label, endpoints, key, rule) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', endpoints: endpoints as never }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(`endpoints.${key}`);
    expect(error.problems[0]).toContain(rule);
  });

  it.each([
    ['an unknown encoding', { encoding: 'xml' }, 'encoding'],
    ['a field that is not a name', { clientIdField: '' }, 'clientIdField'],
    ['an unknown key', { grantType: 'client_credentials' }, 'grantType'],
  ])('tokenRequest with %s is a boot error naming the key', (_label, tokenRequest, key) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', tokenRequest: tokenRequest as never }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(`tokenRequest.${key}`);
  });

  it('a base URL with credentials is a boot error that does not print them', () => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://shop:b4se-Pw9@pay.example.com' }));
    expect(error.problems).toEqual([expect.stringContaining('without credentials')]);
    expect(`${error.message}${JSON.stringify(error)}${inspect(error)}`).not.toContain('b4se-Pw9');
  });

  it('a base URL the API path cannot be appended to is a boot error: with /api/v1, a query or a fragment', () => {
    for (const [baseUrl, problem] of [
      ['https://pay.example.com/sandbox/api/v1', 'without /api/v1'],
      ['https://pay.example.com/api/v1/', 'without /api/v1'],
      ['https://pay.example.com/sandbox', 'without /sandbox'],
      ['https://pay.example.com/?tenant=a', 'query or fragment'],
      ['https://pay.example.com/#x', 'query or fragment'],
    ]) {
      expect(captureError(() => resolvePaymentOptions({ baseUrl })).problems).toEqual([expect.stringContaining(problem)]);
    }
    // the base URL is never printed; its origin alone was suggested, which drops a path prefix
    const behindPrefix = captureError(() => resolvePaymentOptions({ baseUrl: 'https://gw.internal.example/payments-proxy/api/v1' }));
    expect(behindPrefix.message).not.toContain('gw.internal.example');
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com/gateway' }).apiBaseUrl).toBe('https://pay.example.com/gateway/sandbox/api/v1');
    // a Docker or Compose service name (was refused as "not an absolute http(s) URL")
    expect(resolvePaymentOptions({ baseUrl: 'http://payment_sim:8080' }).apiBaseUrl).toBe('http://payment_sim:8080/sandbox/api/v1');
  });

  it('apiBasePath replaces the API path of the environment, from the option or PAYMENT_API_BASE_PATH; a path that is not plain is a boot error', () => {
    const baseUrl = 'https://pay.example.com';
    expect(resolvePaymentOptions({ baseUrl, apiBasePath: '/api/v2' }).apiBaseUrl).toBe('https://pay.example.com/api/v2');
    expect(resolvePaymentOptions({ baseUrl, environment: 'live', apiBasePath: '/v2/' }).apiBaseUrl).toBe('https://pay.example.com/v2');
    expect(resolvePaymentOptions({ baseUrl }, readPaymentEnv((name) => ({ PAYMENT_API_BASE_PATH: '/sandbox/api/v2' })[name])).apiBaseUrl).toBe('https://pay.example.com/sandbox/api/v2');
    // the option wins over the variable, as everywhere
    expect(resolvePaymentOptions({ baseUrl, apiBasePath: '/api/v3' }, readPaymentEnv((name) => ({ PAYMENT_API_BASE_PATH: '/api/v2' })[name])).apiBaseUrl).toBe('https://pay.example.com/api/v3');
    for (const apiBasePath of ['api/v2', '/api/../v1', '/api/v2?x=1', '/api v2', '//evil.example/api', '']) {
      expect(captureError(() => resolvePaymentOptions({ baseUrl, apiBasePath })).problems).toEqual([expect.stringContaining("'apiBasePath' (env PAYMENT_API_BASE_PATH) must be a path such as")]);
    }
  });

  it('a number that is not whole says only that; lease and retention have upper bounds Redis accepts, the body limit one memory does', () => {
    const error = captureError(() =>
      resolvePaymentOptions({
        baseUrl: 'https://pay.example.com',
        maxRetries: 2.5,
        httpTimeoutMs: Number.NaN,
        webhookRetentionMs: 1e20,
        webhookLeaseMs: 1e12,
        queueDeadLetterRetentionMs: 1e16,
        webhookMaxBodyBytes: 1e20,
      }),
    );
    expect(error.problems).toEqual([
      // the bad value is repeated (no secret here), so the operator sees what was read
      expect.stringMatching(/'webhookMaxBodyBytes'.* must be at most 104857600 bytes \(100 MiB\)/),
      expect.stringMatching(/'httpTimeoutMs'.* must be a whole number of milliseconds \(given: NaN\)$/),
      expect.stringMatching(/'maxRetries'.* must be a whole number \(given: 2\.5\)$/),
      expect.stringMatching(/'webhookLeaseMs'.* must be at most 86400000 ms/),
      expect.stringMatching(/'webhookRetentionMs'.* must be at most 31622400000 ms/),
      expect.stringMatching(/'queueDeadLetterRetentionMs'.* must be at most 31622400000 ms/),
    ]);
  });

  it.each([[123], [true], [{ secret: 'whsec_in_an_object' }]])('a webhook secret that is neither text nor a list (%j) is a configuration error, not a crash', (given) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookSecret: given as never }));
    expect(error.problems).toEqual([expect.stringMatching(/^option 'webhookSecret' .*must be a string or a list of strings/)]);
    expect(error.message).not.toContain('whsec_in_an_object');
  });

  it('repeats a bad value read from the environment, but never a secret, a Redis URL or the base URL', () => {
    const env = readPaymentEnv((name) =>
      ({
        PAYMENT_BASE_URL: 'https://user:pa55@pay.example.com/api/v1',
        PAYMENT_HTTP_TIMEOUT_MS: '15s',
        PAYMENT_ENVIRONMENT: 'prod',
        PAYMENT_REDIS_URL: 'redis://:pa55@redis.internal:6379/x',
      })[name],
    );
    const error = captureError(() => resolvePaymentOptions({}, env));
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^PAYMENT_HTTP_TIMEOUT_MS \(option 'httpTimeoutMs'\) must be a whole number of milliseconds \(given: "15s"\)$/),
        expect.stringMatching(/^PAYMENT_ENVIRONMENT \(option 'environment'\) .* \(given: "prod"\)$/),
      ]),
    );
    expect(error.message).not.toContain('pa55');
    expect(error.problems.filter((problem) => /PAYMENT_(BASE|REDIS)_URL/.test(problem) && problem.includes('given:'))).toEqual([]);
  });

  it('never repeats a bad value that holds a secret of the account, read into the wrong key (a shifted line of an env file, a mapping slip)', () => {
    const env = readPaymentEnv((name) =>
      ({
        PAYMENT_BASE_URL: 'https://pay.example.com',
        PAYMENT_WEBHOOK_SECRET: 'whsec_abc:def',
        PAYMENT_WEBHOOK_PATH: 'whsec_abc:def',
        PAYMENT_ENVIRONMENT: 'redis-pa55word',
        PAYMENT_REDIS_URL: 'redis://:redis-pa55word@redis.internal:6379',
      })[name],
    );
    const fromEnv = captureError(() => resolvePaymentOptions({}, env));
    const explicit = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', clientId: 'id', clientSecret: 'cs_live_do_not_print_me', processing: 'cs_live_do_not_print_me' } as never));
    for (const error of [fromEnv, explicit]) {
      expect(error.message).not.toMatch(/whsec_abc|pa55word|do_not_print/);
      expect(error.problems.some((problem) => problem.endsWith('(given: a value of a secret option)'))).toBe(true);
    }
    expect(fromEnv.problems.filter((problem) => problem.includes('(given: a value of a secret option)'))).toHaveLength(2);
  });

  it('never repeats a numeric secret read into a number\'s variable, nor a multiple of it in a rule that uses that number', () => {
    // a shifted line of an env file: the client secret (digits only) in PAYMENT_MAX_RETRIES, the
    // webhook secret in PAYMENT_WEBHOOK_TOLERANCE_SECONDS (whose replay window was then printed, times 2000)
    const vars: Record<string, string> = {
      PAYMENT_BASE_URL: 'https://pay.example.com',
      PAYMENT_CLIENT_ID: 'client-1',
      PAYMENT_CLIENT_SECRET: '73910466512',
      PAYMENT_MAX_RETRIES: '73910466512',
      PAYMENT_WEBHOOK_SECRET: '884213377001',
      PAYMENT_WEBHOOK_TOLERANCE_SECONDS: '884213377001',
    };
    const error = captureError(() => resolvePaymentOptions({}, readPaymentEnv((name) => vars[name])));
    expect(error.message).not.toMatch(/73910466512|884213377001|1768426754002000/);
    expect(error.problems.filter((problem) => problem.endsWith('(given: a value of a secret option)'))).toHaveLength(2);
    // the retention rule is about a tolerance in range: the user set no retention to blame
    expect(error.problems.some((problem) => problem.includes('webhookRetentionMs'))).toBe(false);
    // a number that is no secret is still shown
    expect(captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', maxRetries: 99 })).message).toContain('(given: 99)');
    // 20 digits read as a number are rounded (73910466512345680000): not repeated either
    const long: Record<string, string> = { PAYMENT_BASE_URL: 'https://pay.example.com', PAYMENT_CLIENT_ID: 'c', PAYMENT_CLIENT_SECRET: '73910466512345678901', PAYMENT_MAX_RETRIES: '73910466512345678901' };
    const rounded = captureError(() => resolvePaymentOptions({}, readPaymentEnv((name) => long[name])));
    expect(rounded.message).not.toMatch(/7391046651234/);
    expect(rounded.problems.filter((problem) => problem.endsWith('(given: a value of a secret option)'))).toHaveLength(1);
  });

  it.each([5, true, [], 'refund'])('refuses endpoints: %p (no object of paths), which booted on the default paths', (endpoints) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', endpoints: endpoints as never }));
    expect(error.problems).toEqual([expect.stringMatching(/^option 'endpoints' must be an object of paths/)]);
  });

  it.each([
    ['endpoints', new Map([['refund', '/x/{trx_id}/refund']]), /^option 'endpoints' must be an object of paths/],
    ['tokenRequest', new Map([['encoding', 'form']]), /^option 'tokenRequest' must be an object/],
    ['tokenResponse', new Map([['tokenFields', ['t']]]), /^option 'tokenResponse' must be an object/],
    ['rateLimits', new Map([['default', 10]]), /^option 'rateLimits' must be an object/],
    ['responseFields', new Map([['trxId', ['id']]]), /^option 'responseFields' must be an object/],
  ])('refuses a Map as %s: its entries are no fields, and the defaults would apply without a word', (option, value, problem) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', [option]: value as never }));
    expect(error.problems).toEqual([expect.stringMatching(problem)]);
  });

  it("never repeats a Redis URL's password read into another key, however short (it is no 8-character part of the URL)", () => {
    for (const password of ['pw12345', 'pa5s', 'pw', 'q']) {
      const vars = { PAYMENT_BASE_URL: 'https://pay.example.com', PAYMENT_REDIS_URL: `redis://:${password}@h:6379`, PAYMENT_REDIS_TIMEOUT_MS: password, PAYMENT_ENVIRONMENT: password };
      const error = captureError(() => resolvePaymentOptions({}, readPaymentEnv((name) => (vars as Record<string, string>)[name])));
      expect(error.message).not.toContain(password);
      expect(error.problems.filter((problem) => problem.endsWith('(given: a value of a secret option)'))).toHaveLength(2);
    }
  });

  it('refuses option values of no JSON type (a BigInt, a Symbol, an object without prototype) with the configuration error naming each, never a TypeError', () => {
    const error = captureError(() =>
      resolvePaymentOptions({
        baseUrl: 'https://pay.example.com',
        webhookToleranceSeconds: 300n as never,
        webhookLeaseMs: Symbol('lease') as never,
        redisKeyPrefix: Object.create(null) as never,
      }),
    );
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    for (const key of ['webhookToleranceSeconds', 'webhookLeaseMs', 'redisKeyPrefix']) expect(error.problems.some((problem) => problem.includes(`'${key}'`))).toBe(true);
  });

  it('never repeats a bad value that looks like a URL with credentials, in whatever key (a Redis URL in the prefix or environment variable)', () => {
    const password = `Sup3rSecretRedisToken${'x'.repeat(180)}`;
    const cases: Array<Record<string, string>> = [
      // over the prefix's 200 characters: refused for its length before the "looks like a URL" check
      { PAYMENT_REDIS_KEY_PREFIX: `rediss://default:${password}@cache.example.com:6380` },
      { PAYMENT_REDIS_KEY_PREFIX: 'redis://:Sup3rSecret@cache:6379 db0' },
      { PAYMENT_ENVIRONMENT: 'redis://:Sup3rSecret@r:6379' },
      { PAYMENT_PROCESSING: 'user:Sup3rSecret@host' },
    ];
    for (const vars of cases) {
      const error = captureError(() => resolvePaymentOptions({}, readPaymentEnv((name) => ({ PAYMENT_BASE_URL: 'https://pay.example.com', ...vars } as Record<string, string>)[name])));
      expect(error.message).not.toContain('Sup3rSecret');
      expect(error.problems.some((problem) => problem.endsWith('(given: a URL or credentials, not repeated)'))).toBe(true);
    }
  });

  it('is inspected (as Nest logs a boot error) with each problem once', () => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'ftp://pay.example.com', maxRetries: 99 }));
    const text = inspect(error);
    for (const problem of error.problems) expect(text.split(problem).length - 1).toBe(1);
    expect(error).toMatchObject({ code: 'PAYMENT_INVALID_CONFIGURATION', account: 'default' });
  });

  it('values a factory passed from ConfigService.get() as text say so; retry delays and the memory bound stay within what timers and integers hold', () => {
    const error = captureError(() =>
      resolvePaymentOptions({ baseUrl: 'https://pay.example.com', httpTimeoutMs: '5000' as never, reconcile: 'true' as never }),
    );
    expect(error.problems).toEqual([
      expect.stringMatching(/'httpTimeoutMs'.* must be a whole number of milliseconds \(given: "5000"\) \(an option given as text, as ConfigService.get\(\) returns environment values: convert it to a number, e.g. Number\(value\)\)$/),
      expect.stringMatching(/'reconcile'.* must be true or false .*\(an option given as text, .*convert it to true or false\)$/),
    ]);
    const bounds = captureError(() =>
      resolvePaymentOptions({ baseUrl: 'https://pay.example.com', retryBaseDelayMs: 5e9, retryMaxDelayMs: 5e9, memoryStoreMaxEntries: 2 ** 60 }),
    );
    expect(bounds.problems).toEqual([
      expect.stringMatching(/'retryBaseDelayMs'.* must be at most 2147483647 ms \(a Node timer's limit\)/),
      expect.stringMatching(/'retryMaxDelayMs'.* must be at most 2147483647 ms/),
      expect.stringMatching(/'memoryStoreMaxEntries'.* must be at most 9007199254740991/),
    ]);
  });

  it('webhookShutdownTimeoutMs: from PAYMENT_WEBHOOK_SHUTDOWN_TIMEOUT_MS (or a named account\'s own), 0 to 600000 ms', () => {
    const read = (vars: Record<string, string>, account?: string) => readPaymentEnv((name) => vars[name], account);
    expect(resolvePaymentOptions({}, read({ PAYMENT_BASE_URL: 'https://pay.example.com', PAYMENT_WEBHOOK_SHUTDOWN_TIMEOUT_MS: '2500' })).webhookShutdownTimeoutMs).toBe(2500);
    const eu = read({ PAYMENT_EU_BASE_URL: 'https://pay.example.com', PAYMENT_EU_WEBHOOK_SHUTDOWN_TIMEOUT_MS: '0' }, 'eu');
    expect(resolvePaymentOptions({}, eu, 'eu').webhookShutdownTimeoutMs).toBe(0);
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookShutdownTimeoutMs: 600_001 }));
    expect(error.problems).toEqual([expect.stringMatching(/'webhookShutdownTimeoutMs'.* must be at most 600000 ms/)]);
  });

  it('a store without complete or release is a boot error, not a failure on the first webhook', () => {
    const claimOnly = { claim: async () => ({ outcome: 'claimed', claimToken: 't' }) };
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', store: claimOnly as never }));
    expect(error.problems).toEqual(["option 'store' must implement WebhookEventStore (claim, complete, release; optional: extend, isProcessed, ping, close): not a function: complete, release"]);
  });

  it('a store whose optional method is there but not a function is a boot error (an extend: true would fail every lease renewal)', () => {
    const methods = { claim: async () => ({ outcome: 'claimed', claimToken: 't' }), complete: async () => {}, release: async () => {} };
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', store: { ...methods, extend: true, ping: 'yes', close: undefined } as never }));
    expect(error.problems).toEqual(["option 'store' must implement WebhookEventStore (claim, complete, release; optional: extend, isProcessed, ping, close): not a function: extend, ping"]);
    expect(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', store: methods as never })).not.toThrow();
  });

  it.each([0, 999, -1000, 1500.5, 3_600_001, '60000'])('maxRetryAfterMs %p is a boot error naming the key', (bad) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', maxRetryAfterMs: bad as never }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain("option 'maxRetryAfterMs'");
  });

  it("webhookPath takes no ':' (a route parameter that would take other accounts' deliveries) and no '.' or '..' segment", () => {
    for (const webhookPath of ['payments/:anything', 'payments/:id/webhook', 'payments/../webhook', './webhook', 'payments/~x']) {
      const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookPath }));
      expect(error.problems).toEqual([expect.stringMatching(/webhookPath.*must be a route path/)]);
    }
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookPath: '/hooks/v1.2/pay_ments-x/' }).webhookPath).toBe('hooks/v1.2/pay_ments-x');
  });

  it("a webhookSecret that names no secret ('', [], ' , ', option or variable) is a boot error, not a silent 'no route' hiding PAYMENT_WEBHOOK_SECRET; listed secrets are trimmed", () => {
    for (const webhookSecret of ['', [], ' , ', ' '] as const) {
      const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookSecret: webhookSecret as never }, { webhookSecret: WEBHOOK_SECRET }));
      expect(error.problems).toEqual([expect.stringMatching(/webhookSecret.* names no secret .*: leave it out \(PAYMENT_WEBHOOK_SECRET then applies\)/)]);
    }
    // from the environment: the route vanished without a word
    const fromEnv = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { webhookSecret: ' , ' }));
    expect(fromEnv.problems).toEqual([expect.stringMatching(/^PAYMENT_WEBHOOK_SECRET \(option 'webhookSecret'\) names no secret .*: unset PAYMENT_WEBHOOK_SECRET or give it a secret; for no route, remove it and set webhookRoute: false$/)]);
    // a JSON list or a quoted value became secrets with brackets and quotes in them: every signature failed
    // (a quoted list too, as `docker --env-file` keeps it: was '"whsec_a' and 'whsec_b"', silently)
    for (const webhookSecret of ['["whsec_a","whsec_b"]', '"whsec_a"', "'whsec_a'", '{"primary":"whsec_a"}', '"whsec_a,whsec_b"', " 'whsec_a, whsec_b' "]) {
      const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { webhookSecret }));
      expect(error.problems).toEqual([expect.stringMatching(/webhookSecret.* looks like JSON or a quoted string: give the secrets as plain text separated by commas/)]);
      expect(error.message).not.toContain('whsec_a');
    }
    // client credentials in quotes: every token call a PAY_1004, after a clean boot
    const quotedCredentials = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { clientId: '"shop"', clientSecret: "'cs_quoted'" }));
    expect(quotedCredentials.problems).toEqual([
      expect.stringMatching(/clientId.* is wrapped in quotes: give it without them/),
      expect.stringMatching(/clientSecret.* is wrapped in quotes: give it without them/),
    ]);
    expect(quotedCredentials.message).not.toContain('cs_quoted');
    // a Redis key prefix in quotes: its keys would differ from every instance given it without them (deduplication split in two)
    const quotedPrefix = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { redisKeyPrefix: '"myapp:"' }));
    expect(quotedPrefix.problems).toEqual([expect.stringMatching(/redisKeyPrefix.* is wrapped in quotes: give it without them/)]);
    // a Redis URL in the prefix's variable: was accepted, its password in every key and in the boot's key-prefix warning
    const urlPrefix = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { redisKeyPrefix: 'redis://:pr3fix-pa55@cache:6379' }));
    expect(urlPrefix.problems).toEqual([
      "PAYMENT_REDIS_KEY_PREFIX (option 'redisKeyPrefix') looks like a URL: a Redis URL goes in redisUrl (PAYMENT_REDIS_URL)",
    ]);
    expect(urlPrefix.message).not.toContain('pr3fix-pa55');
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { redisKeyPrefix: 'shop:eu:' }).redisKeyPrefix).toBe('shop:eu:');
    // a secret that merely starts or ends with a quote or bracket is a secret (random secrets do, often)
    for (const webhookSecret of ["whsec_8fK2'mQ", 'Zt9]pL0x', '{kS8#aa}x', '[a]b', "'ab"]) {
      expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { webhookSecret }).webhookSecrets).toEqual([webhookSecret]);
    }
    // one secret per line (a secrets file) was taken as one secret with a line break: every delivery a 401
    for (const webhookSecret of ['whsec_a\nwhsec_b', 'whsec_a\r\nwhsec_b', 'whsec_a whsec_b', 'whsec_a\u2028whsec_b']) {
      const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, { webhookSecret }));
      expect(error.problems).toEqual([expect.stringMatching(/webhookSecret.* has a secret with a space, line break, tab or NUL inside: separate several secrets with commas/)]);
      expect(error.message).not.toContain('whsec_a');
    }
    // a secret read from a file keeps its newline
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookSecret: [`${WEBHOOK_SECRET}\n`, ' whsec_2 '] }).webhookSecrets).toEqual([WEBHOOK_SECRET, 'whsec_2']);
    expect(captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookSecret: [' '] })).problems.join('\n')).toMatch(/webhookSecret.*non-empty/);
  });

  it('clientId and clientSecret given as options are trimmed like the env values and webhook secrets; a blank one is a boot error naming the key', () => {
    const options = resolvePaymentOptions({ baseUrl: 'https://pay.example.com', clientId: ' id\n', clientSecret: `${SECRET}\r\n` });
    expect(options).toMatchObject({ clientId: 'id', clientSecret: SECRET });
    const error = captureError(() =>
      resolvePaymentOptions({ baseUrl: 'https://pay.example.com', clientId: 'id', clientSecret: ' \n' }, { clientSecret: SECRET }),
    );
    expect(error.problems).toEqual(["option 'clientSecret' (env PAYMENT_CLIENT_SECRET) must be a non-empty string"]);
  });

  it('webhookRetentionMs under twice the replay window is a boot error: a copy of a signed delivery would run again once forgotten', () => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookRetentionMs: 1_000, webhookLeaseMs: 1_000 }));
    expect(error.problems).toEqual([expect.stringMatching(/webhookRetentionMs.* must be at least twice webhookToleranceSeconds \(600000 ms\)/)]);
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', webhookRetentionMs: 20_000, webhookLeaseMs: 1_000, webhookToleranceSeconds: 10 }).webhookRetentionMs).toBe(20_000);
  });

  it('an unknown key is a boot error (a typo, a resolved field name, an extra returned by a factory), with the likely key', () => {
    const error = captureError(() =>
      resolvePaymentOptions({ baseUrl: 'https://pay.example.com', clientSecert: SECRET, webhookSecrets: [WEBHOOK_SECRET], account: 'eu', colour: 'blue' } as never),
    );
    expect(error.problems).toEqual([
      "option 'clientSecert' is unknown; did you mean 'clientSecret'?",
      "option 'webhookSecrets' is unknown; did you mean 'webhookSecret'?",
      "option 'account' shapes the module: give it to forRootAsync() beside useFactory, not in the options the factory returns",
      "option 'colour' is unknown",
    ]);
    expect(`${error.message}\n${inspect(error)}`).not.toContain(SECRET);
  });

  it('maxRetryAfterMs defaults to 120000 ms', () => {
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }).maxRetryAfterMs).toBe(120_000);
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', maxRetryAfterMs: 1_000 }).maxRetryAfterMs).toBe(1_000);
  });

  it('responseFields default to camelCase then snake_case; a list given replaces the default', () => {
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }).responseFields).toEqual({
      trxId: ['trxId', 'trx_id'],
      refundUid: ['refundUid', 'refund_uid'],
      payoutUid: ['payoutUid', 'payout_uid'],
      status: ['status'],
    });
    const options = resolvePaymentOptions({ baseUrl: 'https://pay.example.com', responseFields: { refundUid: ['id'] } });
    expect(options.responseFields.refundUid).toEqual(['id']);
    expect(options.responseFields.trxId).toEqual(['trxId', 'trx_id']);
  });

  it.each([
    [{ trxId: [] }, 'responseFields.trxId'],
    [{ status: 'status' }, 'responseFields.status'],
    [{ payoutUid: ['payoutUid', ''] }, 'responseFields.payoutUid'],
    [{ refundId: ['id'] }, 'responseFields.refundId'],
  ])('responseFields %j is a boot error naming the key', (responseFields, key) => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', responseFields: responseFields as never }));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(`option '${key}'`);
  });

  it('accepts whole limits of 1 and more, and false', () => {
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', rateLimits: { readsPerMinute: 1 } }).rateLimits).toMatchObject({ readsPerMinute: 1, moneyMovementPerMinute: 30 });
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', rateLimits: false }).rateLimits).toBe(false);
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

describe('Redis URLs are redacted by parsing', () => {
  // [url, the password, what must stay readable]
  const forms: Array<[string, string, string]> = [
    ['redis://:p@ssw0rd@cache.internal:6379', 'p@ssw0rd', 'redis://:[redacted]@cache.internal:6379'],
    ['redis://user:pw-Xy7@cache.internal', 'pw-Xy7', 'redis://user:[redacted]@cache.internal'],
    ['rediss://default:s3cr:et@cache.internal:6380/2', 's3cr:et', 'rediss://default:[redacted]@cache.internal:6380/2'],
    ['redis://cache.internal:6379/0?password=q-Pw%40rd9&db=1', 'q-Pw@rd9', 'redis://cache.internal:6379/0?password=[redacted]&db=1'],
    // ioredis takes every query parameter as an option: the sentinels' password too
    ['redis://cache.internal:6379/0?sentinelPassword=s3nt-Pw9&db=1', 's3nt-Pw9', 'redis://cache.internal:6379/0?sentinelPassword=[redacted]&db=1'],
  ];

  it.each(forms)('redactRedisUrl(%s) drops the password and keeps the rest', (url, password, expected) => {
    const redacted = redactRedisUrl(url);
    expect(redacted).toBe(expected);
    expect(redacted).not.toContain(password);
    expect(redacted).not.toContain(encodeURIComponent(password));
  });

  it('leaves a URL without credentials alone and replaces unparsable text whole', () => {
    expect(redactRedisUrl('redis://127.0.0.1:6379/3')).toBe('redis://127.0.0.1:6379/3');
    expect(redactRedisUrl('redis://:p@ssw0rd@h:99999')).not.toContain('ssw0rd');
    // a lone user-info part may be a password written without the ':'
    expect(redactRedisUrl('redis://hunter2-pw@h:6379')).toBe('redis://[redacted]@h:6379');
    // an unencoded '/' ends the user info: the rest of the password would look like a path
    expect(redactRedisUrl('redis://:ab/cd-Zq9@h:6379')).not.toContain('cd-Zq9');
  });

  it.each(forms)('resolved options with %s keep the password usable but out of JSON and inspect', (url, password, expected) => {
    const options = resolvePaymentOptions({ baseUrl: 'https://pay.example.com', redisUrl: url });
    expect(options.redisUrl).toBe(url);
    expect(JSON.parse(JSON.stringify(options)).redisUrl).toBe(expected);
    for (const text of [JSON.stringify(options), inspect(options, { depth: 5 }), inspect(options, { depth: 5, showHidden: true })]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(encodeURIComponent(password));
      expect(text).not.toContain(password.slice(2)); // no tail of it either
      expect(text).toContain('cache.internal');
    }
  });

  it("a password with an unencoded '?' (its tail read as a query) is a boot error, and redaction drops the whole URL", () => {
    for (const url of ['redis://user:123?x=s3cretpw@127.0.0.1:6390', 'redis://default:2024?s3cret-Zz9@redis.internal:6379/0']) {
      expect(redactRedisUrl(url)).toBe('[redacted] (URL with user info in its query)');
      const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', queueRedisUrl: url }));
      expect(error.problems).toEqual([expect.stringMatching(/queueRedisUrl.* has an '@' after a '\?' or '#': percent-encode/)]);
      expect(`${error.message}\n${JSON.stringify(error)}\n${inspect(error)}`).not.toMatch(/s3cret/);
    }
    // likewise a '/' (password '2024/cd-Zq9': the URL still parses, with host 'user')
    const slash = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', redisUrl: 'redis://user:2024/cd-Zq9@redis.internal:6379' }));
    expect(slash.problems).toEqual([expect.stringMatching(/redisUrl.* has a path that is not a db number: percent-encode '\/'/)]);
    expect(`${slash.message}\n${inspect(slash)}`).not.toContain('cd-Zq9');
    // encoded, the same password is fine
    expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', redisUrl: 'redis://user:123%3Fx%3Ds3cretpw@127.0.0.1:6390' }).redisUrl).toContain('%3F');
  });

  it("a '%' ioredis cannot decode (user name, password, a credential query parameter) is a boot error naming the variable, not the value", () => {
    const env = (url: string) => readPaymentEnv((name) => (name === 'PAYMENT_REDIS_URL' ? url : undefined));
    for (const [url, part] of [
      ['redis://:s3cr3t%zz@127.0.0.1:6390/0', 'password'],
      ['redis://s3cr3t%:pw@127.0.0.1:6390/0', 'user name'],
      ['redis://127.0.0.1:6390/0?db=1&password=s3cr3t%zz', "query parameter 'password'"],
    ]) {
      const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com' }, env(url)));
      expect(error.problems).toEqual([`PAYMENT_REDIS_URL (option 'redisUrl') has a '%' not followed by two hex digits in its ${part}: percent-encode '%' as %25`]);
      expect(`${error.message}\n${JSON.stringify(error)}\n${inspect(error)}`).not.toContain('s3cr3t');
    }
    // encoded as %25 it is fine, and so is a '%' in a query parameter that is no credential
    for (const url of ['redis://:s3cr3t%25zz@127.0.0.1:6390/0', 'redis://127.0.0.1:6390/0?password=s3cr3t%25zz&name=50%']) {
      expect(resolvePaymentOptions({ baseUrl: 'https://pay.example.com', redisUrl: url }).redisUrl).toBe(url);
    }
  });

  it('a Redis URL that does not parse is a boot error that does not print it', () => {
    const error = captureError(() => resolvePaymentOptions({ baseUrl: 'https://pay.example.com', redisUrl: 'redis://:p@ssw0rd@h:99999' }));
    expect(error.problems.join('\n')).toMatch(/redisUrl.*parsable/);
    expect(`${error.message}\n${JSON.stringify(error)}\n${inspect(error)}`).not.toContain('ssw0rd');
  });
});
