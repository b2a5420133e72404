import { PaymentErrorCode, PaymentNetworkError, PaymentRateLimitError, type PaymentApiError } from './payment-api.errors.js';

/**
 * How a call may be retried:
 * - `safe`: reads; any network error, 5xx and 429.
 * - `keyed`: payment creation with an idempotency key; PAY_5001, PAY_5002, 429,
 *   network errors and bare 502/503/504 from proxies (no service code; a bare 500 is not
 *   retried); never PAY_5003 (a real provider answer).
 * - `unsafe`: refunds, payouts, anything not idempotent; only when the service surely
 *   did not act: 429 and failures before the request was sent.
 * - `token`: the token call; harmless to repeat.
 * - `none`: one attempt (the health check's token call: a probe repeated every few seconds
 *   must not spend the token limit on retries).
 */
export type RetryPolicy = 'safe' | 'keyed' | 'unsafe' | 'token' | 'none';

/** Whether `error` may be retried under `policy` (the retry count is the caller's). */
export function isRetryable(policy: RetryPolicy, error: PaymentApiError): boolean {
  const status = error.httpStatus;
  if (policy === 'none') return false;
  if (error instanceof PaymentRateLimitError) return true;
  if (error instanceof PaymentNetworkError) {
    return policy === 'unsafe' ? !error.mayHaveReachedService : true;
  }
  switch (policy) {
    case 'safe':
    case 'token':
      return status !== undefined && status >= 500;
    case 'keyed':
      return (
        error.code === PaymentErrorCode.TOKEN_CREATION_FAILED ||
        error.code === PaymentErrorCode.PAYMENT_CREATION_FAILED ||
        // bare gateway errors (no service code): the idempotency key makes a repeat harmless
        (status !== undefined && status >= 502 && error.code.startsWith('HTTP_'))
      );
    case 'unsafe':
      return false;
  }
}

/** The answer's `Retry-After` in ms (a 429, a 503), when it has one. */
export function retryAfterMsOf(failure: PaymentApiError): number | undefined {
  return failure.retryAfterSeconds === undefined ? undefined : failure.retryAfterSeconds * 1000;
}

/**
 * A `Retry-After` is never cut short (an early retry is refused again and burns a retry);
 * one longer than `maxRetryAfterMs` is not waited for: this 429 is thrown at once (another
 * status is thrown as it is, its `retryAfterSeconds` set).
 */
export function retryAfterTooLongError(failure: PaymentRateLimitError, retryAfterMs: number, maxRetryAfterMs: number): PaymentRateLimitError {
  return new PaymentRateLimitError({
    account: failure.account,
    code: failure.code,
    message: `${failure.message}; Retry-After ${retryAfterMs / 1000} s is longer than maxRetryAfterMs (${maxRetryAfterMs} ms): not retried; try again in ${retryAfterMs / 1000} s`,
    httpStatus: failure.httpStatus,
    errors: failure.errors,
    retryAfterSeconds: failure.retryAfterSeconds,
    method: failure.method,
    path: failure.path,
    idempotencyKey: failure.idempotencyKey,
  });
}

/** A 2xx whose body could not be read (see `PaymentHttpClient`): the service acted on the call. */
export function isUnreadSuccess(failure: PaymentApiError): failure is PaymentNetworkError & { httpStatus: number } {
  return failure instanceof PaymentNetworkError && failure.httpStatus !== undefined && failure.httpStatus >= 200 && failure.httpStatus < 300;
}

/** A 401/403 naming the bearer token (expired, or matching no session): the call was not carried out. */
export function isTokenRefusal(failure: PaymentApiError): boolean {
  return (
    (failure.httpStatus === 401 || failure.httpStatus === 403) &&
    !failure.mayHaveReachedService &&
    (failure.code === PaymentErrorCode.TOKEN_EXPIRED || failure.code === PaymentErrorCode.TOKEN_INVALID)
  );
}
