import { paymentErrorFromResponse } from '../../lib/client/payment-error-response.reader.js';
import { PaymentEventHandlerError, PaymentEventReconciliationError } from '../../lib/events/payment-event.errors.js';
import { attemptError } from '../../lib/queue/payment-queue.errors.js';

/** A client error as the service's answer makes it: its message quotes what the service echoed. */
const refused = () =>
  paymentErrorFromResponse({
    httpStatus: 422,
    body: { status: 'error', code: 'PAY_3001', message: 'IBAN DE89370400440532013000 of Jane Doe rejected', errors: {}, data: [] },
    method: 'POST',
    path: '/payout',
  });

describe('attemptError (what a failed attempt is recorded and logged with)', () => {
  it('names each failed handler with its error; a client error by class, code and status, not the echoed answer', () => {
    const own = new Error('stock service down');
    const recorded = attemptError(
      new PaymentEventHandlerError('evt_1', 'payment.succeeded', [
        { handler: 'Shop.onPaid', error: refused() },
        { handler: 'Stock.onPaid', error: own },
      ]),
    ) as Error;
    expect(recorded.message).toBe(
      '2 handler(s) failed for payment.succeeded event evt_1: Shop.onPaid: PaymentPayoutError PAY_3001 (HTTP 422); Stock.onPaid: stock service down',
    );
    expect(recorded.name).toBe('PaymentEventHandlerError');
  });

  it("adds a cause's message; a client error cause (a failed reconciliation) by its code and status", () => {
    const recorded = attemptError(new PaymentEventReconciliationError('evt_2', 'payment.succeeded', 'trx_1', { cause: refused() })) as Error;
    expect(recorded.message).toBe('Could not read the payment status of payment.succeeded event evt_2; no handler ran (PaymentPayoutError PAY_3001 (HTTP 422))');
    expect(recorded.message).not.toContain('Jane Doe');
  });
});
