import {
  PaymentAuthenticationError,
  PaymentNetworkError,
  PaymentProviderError,
  PaymentRateLimitError,
  PaymentServerError,
  PaymentValidationError,
  type PaymentApiError,
} from '../../lib/client/payment-api.errors.js';
import axios, { AxiosError } from 'axios';
import { networkErrorFrom, parseRetryAfter } from '../../lib/client/payment-http.client.js';
import { isRetryable, type RetryPolicy } from '../../lib/client/payment-retry.policy.js';

const server = (code: string, httpStatus: number) => new PaymentServerError({ code, httpStatus, message: code });
const network = (mayHaveReachedService: boolean) =>
  new PaymentNetworkError({ code: 'NETWORK_ERROR', message: 'n', mayHaveReachedService, failure: mayHaveReachedService ? 'timeout' : 'connection-refused' });

describe('isRetryable', () => {
  const errors: Record<string, PaymentApiError> = {
    'PAY_5001': server('PAY_5001', 500),
    'PAY_5002': server('PAY_5002', 400),
    'HTTP_503': server('HTTP_503', 503),
    'HTTP_500': server('HTTP_500', 500),
    'PAY_5003': new PaymentProviderError({ code: 'PAY_5003', httpStatus: 500, message: 'p' }),
    '429': new PaymentRateLimitError({ code: 'RATE_LIMITED', httpStatus: 429, message: 'r' }),
    'sent?': network(true),
    'not sent': network(false),
    'PAY_4000': new PaymentValidationError({ code: 'PAY_4000', httpStatus: 400, message: 'v' }),
    'PAY_1004': new PaymentAuthenticationError({ code: 'PAY_1004', httpStatus: 401, message: 'a' }),
  };
  const expected: Record<RetryPolicy, string[]> = {
    safe: ['PAY_5001', 'HTTP_503', 'HTTP_500', 'PAY_5003', '429', 'sent?', 'not sent'],
    token: ['PAY_5001', 'HTTP_503', 'HTTP_500', 'PAY_5003', '429', 'sent?', 'not sent'],
    keyed: ['PAY_5001', 'PAY_5002', 'HTTP_503', '429', 'sent?', 'not sent'],
    unsafe: ['429', 'not sent'],
    none: [],
  };
  it.each(Object.keys(expected) as RetryPolicy[])('%s', (policy) => {
    const retried = Object.entries(errors)
      .filter(([, error]) => isRetryable(policy, error))
      .map(([name]) => name);
    expect(retried.sort()).toEqual([...expected[policy]].sort());
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates, ignores junk', () => {
    const now = Date.UTC(2026, 0, 1, 0, 0, 0);
    expect(parseRetryAfter('7', now)).toBe(7);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter(new Date(now + 12_500).toUTCString(), now)).toBe(12);
    expect(parseRetryAfter(new Date(now - 5_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
    // a fraction is rounded up: the wait is never cut short
    expect(parseRetryAfter('1.5', now)).toBe(2);
    expect(parseRetryAfter('0.2', now)).toBe(1);
    expect(parseRetryAfter('1.', now)).toBeUndefined();
    // a number too large for a double stays a number (Infinity would be null in toJSON())
    expect(parseRetryAfter('9'.repeat(400), now)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('takes the three HTTP-date forms only, never text Date.parse would read as a date', () => {
    const now = Date.UTC(1994, 10, 6, 8, 49, 0);
    // RFC 9110 5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept (all GMT)
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(37);
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(37);
    expect(parseRetryAfter('Sun Nov  6 08:49:37 1994', now)).toBe(37);
    // RFC 850's two-digit year is the nearest one not more than 50 years ahead of now (RFC 9110 5.6.7)
    const in2026 = Date.UTC(2026, 10, 29, 8, 0, 0);
    expect(parseRetryAfter('Sunday, 29-Nov-26 08:00:05 GMT', in2026)).toBe(5);
    expect(parseRetryAfter('Monday, 29-Nov-60 08:00:00 GMT', in2026)).toBe((Date.UTC(2060, 10, 29, 8) - in2026) / 1000);
    expect(parseRetryAfter('Sunday, 29-Nov-99 08:00:00 GMT', in2026)).toBe(0); // 1999, not 2099
    // and the next century's, when "now" is late in this one: 2100, not 2000; 2105, not 2005
    const endOf2099 = Date.UTC(2099, 11, 31, 23, 59, 50);
    expect(parseRetryAfter('Friday, 01-Jan-00 00:00:00 GMT', endOf2099)).toBe(10);
    const in2060 = Date.UTC(2060, 0, 1);
    expect(parseRetryAfter('Thursday, 01-Jan-05 00:00:00 GMT', in2060)).toBe((Date.UTC(2105, 0, 1) - in2060) / 1000);
    // junk Date.parse takes (a wait of decades: the call failed at once instead of backing off)
    for (const junk of ['in 2030', 'foo 99999', 'Nov 2030', 'Sun, 06 Nov 2094 08:49:37', '2030-01-01T00:00:00Z']) {
      expect([junk, parseRetryAfter(junk, now)]).toEqual([junk, undefined]);
    }
  });
});

describe('networkErrorFrom: whether a failure without an answer may have reached the service', () => {
  /** A socket error as Node raises it (`errnoException(code, syscall)`), wrapped as axios wraps it. */
  const socketError = (code: string, syscall: string) =>
    AxiosError.from(Object.assign(new Error(`${syscall} ${code}`), { code, syscall }), code);

  it.each([
    ['ECONNREFUSED', 'connect', false],
    ['EHOSTUNREACH', 'connect', false],
    ['ENETUNREACH', 'connect', false],
    ['ENOTFOUND', 'getaddrinfo', false],
    // on a kept-alive connection, after the request was written: a refund sent again could pay twice
    ['EHOSTUNREACH', 'read', true],
    ['ENETUNREACH', 'write', true],
    ['ECONNRESET', 'read', true],
  ])('%s from %s: mayHaveReachedService %s', (code, syscall, reached) => {
    const error = networkErrorFrom(socketError(code, syscall), 'POST', '/refunds');
    expect(error.mayHaveReachedService).toBe(reached);
    expect(error.message).toContain(reached ? 'the service may have received it' : 'the request never reached the service');
  });

  it('a real refused connection through axios is not sent', async () => {
    const error = await axios.post('http://127.0.0.1:9/refunds', {}).catch((e: unknown) => e);
    expect(networkErrorFrom(error, 'POST', '/refunds').mayHaveReachedService).toBe(false);
  });
});
