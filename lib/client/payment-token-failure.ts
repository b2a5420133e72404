import { messageWithoutAccount, PaymentApiError, type PaymentApiErrorDetails, PaymentNetworkError, PaymentValidationError } from './payment-api.errors.js';
import type { ServiceCall } from './payment-service-call.interface.js';

/** Errors made by `tokenFailureOfCall`: their status is the token call's, not an answer to the call. */
const tokenFailures = new WeakSet<PaymentApiError>();

/** Whether `error` ended a call that was not sent because its token could not be had. */
export function isTokenFailureOfCall(error: unknown): boolean {
  return error instanceof PaymentApiError && tokenFailures.has(error);
}

/**
 * The error of a call whose access token could not be had. The call itself was not sent (again),
 * so the error names the call's method and path, and `mayHaveReachedService` is only what an
 * earlier attempt of the call may have done (`mayHaveActed`): the token call's own (true after
 * its 5xx or time-out) is about a token, not a refund or payout. The class, code, HTTP status
 * (none for a network error: an unread answer's status would read as this call's),
 * `Retry-After`, field errors and network failure kind stay the token failure's, so callers
 * branch as on the token call's error, which is the `cause`.
 */
export function tokenFailureOfCall(error: PaymentApiError, call: ServiceCall, mayHaveActed: boolean, account: string): PaymentApiError {
  const failed = `getting an access token failed (${messageWithoutAccount(error)})`;
  const details: PaymentApiErrorDetails & { mayHaveReachedService: boolean } = {
    code: error.code,
    // a network error's status is the token call's unread answer, which says nothing of this call
    httpStatus: error instanceof PaymentNetworkError ? undefined : error.httpStatus,
    errors: error.errors,
    retryAfterSeconds: error.retryAfterSeconds,
    account,
    message: mayHaveActed
      ? `${call.method} ${call.path} was not sent again: ${failed}; an earlier attempt may have reached the service`
      : `${call.method} ${call.path} was not sent: ${failed}`,
    method: call.method,
    path: call.path,
    idempotencyKey: call.idempotencyKey,
    mayHaveReachedService: mayHaveActed,
  };
  let rebuilt: PaymentApiError;
  if (error instanceof PaymentNetworkError) rebuilt = new PaymentNetworkError({ ...details, failure: error.failure });
  else if (error instanceof PaymentValidationError) rebuilt = new PaymentValidationError({ ...details, clientSide: error.clientSide });
  else rebuilt = new (error.constructor as new (details: PaymentApiErrorDetails) => PaymentApiError)(details);
  Object.defineProperty(rebuilt, 'cause', { value: error, enumerable: false, writable: true, configurable: true });
  tokenFailures.add(rebuilt);
  return rebuilt;
}
