import {
  PaymentApiError,
  PaymentAuthenticationError,
  PaymentErrorCode,
  PaymentInvalidStateError,
  PaymentNetworkError,
  PaymentNotFoundError,
  PaymentPayoutError,
  PaymentProviderError,
  PaymentRateLimitError,
  PaymentServerError,
  PaymentValidationError,
  withEarlierAttemptMayHaveActed,
} from '../../lib/client/payment-api.errors.js';
import { paymentErrorFromResponse } from '../../lib/client/payment-error-response.reader.js';

const envelope = (code: string, message = 'msg', errors: Record<string, string[]> = {}) => ({
  status: 'error',
  code,
  message,
  errors,
  data: [],
});

describe('PaymentErrorCode', () => {
  it('lists every code of spec 7.1 exactly once', () => {
    const codes = Object.values(PaymentErrorCode).sort();
    expect(codes).toEqual(
      [
        'PAY_1001', 'PAY_1002', 'PAY_1003', 'PAY_1004', 'PAY_1005',
        'PAY_2001', 'PAY_2002', 'PAY_2003', 'PAY_2004', 'PAY_2005', 'PAY_2006',
        'PAY_3001', 'PAY_3002', 'PAY_4000', 'PAY_5001', 'PAY_5002', 'PAY_5003', 'PAY_6001',
      ].sort(),
    );
  });
});

describe('paymentErrorFromResponse', () => {
  const cases: Array<[string, number, Function]> = [
    ['PAY_1001', 401, PaymentAuthenticationError],
    ['PAY_1002', 403, PaymentAuthenticationError],
    ['PAY_1003', 401, PaymentAuthenticationError],
    ['PAY_1004', 401, PaymentAuthenticationError],
    ['PAY_1005', 400, PaymentAuthenticationError],
    ['PAY_2003', 400, PaymentAuthenticationError],
    ['PAY_6001', 400, PaymentAuthenticationError],
    ['PAY_2001', 404, PaymentNotFoundError],
    ['PAY_2005', 404, PaymentNotFoundError],
    ['PAY_3002', 404, PaymentNotFoundError],
    ['PAY_2002', 400, PaymentInvalidStateError],
    ['PAY_2004', 422, PaymentInvalidStateError],
    ['PAY_2006', 422, PaymentInvalidStateError],
    ['PAY_3001', 422, PaymentPayoutError],
    ['PAY_4000', 400, PaymentValidationError],
    ['PAY_5001', 500, PaymentServerError],
    ['PAY_5002', 400, PaymentServerError],
    ['PAY_5003', 500, PaymentProviderError],
    ['RATE_LIMITED', 429, PaymentRateLimitError],
  ];

  it.each(cases)('%s (HTTP %d) → %p', (code, status, ErrorClass) => {
    const error = paymentErrorFromResponse({ httpStatus: status, body: envelope(code), method: 'GET', path: '/x' });
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toBeInstanceOf(PaymentApiError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.httpStatus).toBe(status);
    expect(error.name).toBe((ErrorClass as { name: string }).name);
  });

  it('keeps per-field validation messages and Retry-After', () => {
    const error = paymentErrorFromResponse({
      httpStatus: 400,
      body: envelope('PAY_4000', 'Validation failed.', { amount: ['must be numeric'] }),
      method: 'POST',
      path: '/payment/create',
    });
    expect(error.errors).toEqual({ amount: ['must be numeric'] });
    const limited = paymentErrorFromResponse({ httpStatus: 429, body: '', retryAfterSeconds: 7, method: 'GET', path: '/p' });
    expect(limited).toBeInstanceOf(PaymentRateLimitError);
    expect(limited.code).toBe('RATE_LIMITED');
    expect(limited.retryAfterSeconds).toBe(7);
  });

  it('mayHaveReachedService: after any 5xx and after PAY_5002 (a 400 for a session that may be half made), not after other 4xx', () => {
    const reached = (code: string, status: number) =>
      paymentErrorFromResponse({ httpStatus: status, body: envelope(code), method: 'POST', path: '/payment/create' }).mayHaveReachedService;
    expect(reached('PAY_5002', 400)).toBe(true);
    expect(reached('PAY_5001', 500)).toBe(true);
    expect(reached('PAY_4000', 400)).toBe(false);
    expect(reached('PAY_2002', 400)).toBe(false);
  });

  it('maps unknown codes and non-JSON bodies by HTTP status', () => {
    expect(paymentErrorFromResponse({ httpStatus: 502, body: '<html>bad gateway</html>', method: 'GET', path: '/p' })).toBeInstanceOf(
      PaymentServerError,
    );
    const e = paymentErrorFromResponse({ httpStatus: 502, body: '<html/>', method: 'GET', path: '/p' });
    expect(e.code).toBe('HTTP_502');
    expect(paymentErrorFromResponse({ httpStatus: 404, body: envelope('PAY_9999'), method: 'GET', path: '/p' })).toBeInstanceOf(
      PaymentNotFoundError,
    );
    const plain = paymentErrorFromResponse({ httpStatus: 409, body: envelope('PAY_9998'), method: 'GET', path: '/p' });
    expect(plain.constructor).toBe(PaymentApiError);
  });

  it('redacts secrets from message and field errors; toJSON carries only safe fields', () => {
    const secret = 'super-secret-value';
    const error = paymentErrorFromResponse({
      httpStatus: 400,
      body: envelope('PAY_4000', `bad secret ${secret}`, { client_secret: [`${secret} is wrong`] }),
      method: 'POST',
      path: '/authentication/token',
      redact: (t) => t.split(secret).join('[redacted]'),
    });
    const serialized = JSON.stringify(error) + error.message + String(error.stack);
    expect(serialized).not.toContain(secret);
    expect(Object.keys(error.toJSON()).sort()).toEqual(
      ['account', 'clientSide', 'code', 'errors', 'httpStatus', 'idempotencyKey', 'mayHaveReachedService', 'message', 'method', 'name', 'path', 'retryAfterSeconds'].sort(),
    );
  });

  it('never takes a code that is no identifier or shows a secret, nor a secret in a field name', () => {
    const secret = 'topsecretvalue';
    const redact = (t: string) => t.split(secret).join('[redacted]');
    const echoed = (code: string) =>
      paymentErrorFromResponse({ httpStatus: 400, body: envelope(code, 'm', { [`${secret}`]: ['wrong'] }), method: 'POST', path: '/t', redact });
    for (const code of [`bad secret ${secret}`, secret, 'PAY 4000', 'x'.repeat(65), '']) {
      const error = echoed(code);
      expect(error.code).toBe('HTTP_400');
      expect(JSON.stringify(error) + error.message).not.toContain(secret);
    }
    expect(echoed('PAY_4000')).toMatchObject({ code: 'PAY_4000', errors: { '[redacted]': ['wrong'] } });
  });

  it('keeps a field error named "__proto__" as a field, on a plain object', () => {
    const body = JSON.parse('{"status":"error","code":"PAY_4000","message":"m","errors":{"__proto__":["bad"],"amount":["too big"]}}') as unknown;
    const error = paymentErrorFromResponse({ httpStatus: 400, body, method: 'POST', path: '/p' });
    expect(Object.getPrototypeOf(error.errors)).toBe(Object.prototype);
    expect(Object.keys(error.errors)).toEqual(['__proto__', 'amount']);
    expect(Object.getOwnPropertyDescriptor(error.errors, '__proto__')?.value).toEqual(['bad']);
  });

  it('PaymentNetworkError says whether the service may have acted', () => {
    const e = new PaymentNetworkError({
      code: 'NETWORK_ERROR',
      message: 'refused',
      mayHaveReachedService: false,
      failure: 'connection-refused',
    });
    expect(e).toBeInstanceOf(PaymentApiError);
    expect(e.toJSON()).toMatchObject({ mayHaveReachedService: false, failure: 'connection-refused', name: 'PaymentNetworkError' });
  });
});

describe('withEarlierAttemptMayHaveActed', () => {
  it("keeps the stack's first line whole when the service's message holds $ patterns", () => {
    const error = new PaymentServerError({ code: 'HTTP_502', httpStatus: 502, message: "upstream said $' and $` and $&" });
    const marked = withEarlierAttemptMayHaveActed(error);
    expect(marked.message).toBe("upstream said $' and $` and $&; an earlier attempt may have reached the service");
    expect(marked.stack!.split('\n')[0]).toBe(`PaymentServerError: ${marked.message}`);
    expect(marked.mayHaveReachedService).toBe(true);
  });
});
