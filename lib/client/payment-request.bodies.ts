import type { CreatePaymentInput } from './payment-api.types.js';
import type { InputChecker } from './payment-input.validation.js';
import type { WireCreatePaymentRequest } from './payment-wire.types.js';

/**
 * The wire body of a payment creation (snake_case fields, amounts as 8-decimal strings),
 * every input checked on the way: problems go to `check`, which throws before anything is sent.
 */
export function paymentRequestBody(check: InputChecker, input: CreatePaymentInput): Omit<WireCreatePaymentRequest, 'idempotency_key'> {
  const amount = check.amount('amount', input?.amount);
  const currency = check.currency('currency', input?.currency);
  const country = check.country('country', input?.country);
  const extra = check.optionalObject('extra', input?.extra);
  const customer = check.optionalObject('customer', input?.customer);
  const body: Omit<WireCreatePaymentRequest, 'idempotency_key'> = { ...extra, amount: amount!, currency: currency! };
  const strings = { custom: 'custom', gateway: 'gateway', returnUrl: 'return_url', cancelUrl: 'cancel_url' } as const;
  for (const [field, wire] of Object.entries(strings)) {
    const value = check.optionalString(field, (input as unknown as Record<string, unknown> | undefined)?.[field]);
    if (value !== undefined) body[wire] = value;
  }
  if (country !== undefined) body.country = country;
  if (customer !== undefined) body.customer = customer;
  if (input?.splits !== undefined) {
    if (!Array.isArray(input.splits)) {
      check.add('splits', 'must be an array');
    } else {
      body.splits = input.splits.map((split, i) => ({
        subaccount_id: check.identifier(`splits[${i}].subaccountId`, split?.subaccountId) ?? '',
        amount: check.amount(`splits[${i}].amount`, split?.amount) ?? '',
      }));
    }
  }
  return body;
}
