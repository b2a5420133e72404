import { PaymentApiError } from '../client/payment-api.errors.js';

/**
 * What telemetry and the module's own log lines say of a client error: its class, code and
 * HTTP status, never its message, which quotes the service's answer (that may echo request
 * fields: a recipient's account number, a card holder). `undefined` for any other error.
 */
export function clientErrorSummary(error: unknown): string | undefined {
  if (!(error instanceof PaymentApiError)) return undefined;
  return `${error.name} ${error.code}${error.httpStatus === undefined ? '' : ` (HTTP ${error.httpStatus})`}`;
}
