import type { CreatePaymentInput } from './payment-api.types.js';
import type { InputChecker } from './payment-input.validation.js';
import type { WireCreatePaymentRequest } from './payment-wire.types.js';

const SPLIT_INPUT_FIELDS = ['subaccountId', 'amount'];

const PAYMENT_INPUT_FIELDS = ['amount', 'currency', 'custom', 'country', 'gateway', 'returnUrl', 'cancelUrl', 'customer', 'splits', 'extra'];

/** Wire fields of a payment creation the module writes, and the typed input that sets each. */
const PAYMENT_WIRE_FIELDS: Readonly<Record<string, string>> = {
  amount: 'amount',
  currency: 'currency',
  country: 'country',
  custom: 'custom',
  gateway: 'gateway',
  return_url: 'returnUrl',
  cancel_url: 'cancelUrl',
  customer: 'customer',
  splits: 'splits',
  idempotency_key: 'the idempotencyKey option',
};

/**
 * The wire body of a payment creation (snake_case fields, amounts as 8-decimal strings),
 * every input checked on the way: problems go to `check`, which throws before anything is sent.
 */
export function paymentRequestBody(check: InputChecker, input: CreatePaymentInput): Omit<WireCreatePaymentRequest, 'idempotency_key'> {
  check.inputObject('input', input, PAYMENT_INPUT_FIELDS);
  const amount = check.amount('amount', input?.amount);
  const currency = check.currency('currency', input?.currency);
  const country = check.country('country', input?.country);
  const extra = check.extra(input?.extra, PAYMENT_WIRE_FIELDS);
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
      // an index loop, not map(): map() skips holes, which JSON then sends as null
      const splits: NonNullable<WireCreatePaymentRequest['splits']> = [];
      for (let i = 0; i < input.splits.length; i++) {
        const split = check.inputObject(`splits[${i}]`, input.splits[i], SPLIT_INPUT_FIELDS);
        if (split === undefined) continue; // a hole or not an object: recorded, nothing is sent
        splits.push({
          subaccount_id: check.identifier(`splits[${i}].subaccountId`, split.subaccountId) ?? '',
          amount: check.amount(`splits[${i}].amount`, split.amount) ?? '',
        });
      }
      body.splits = splits;
    }
  }
  return body;
}
