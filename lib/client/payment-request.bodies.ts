import { PaymentErrorCode, PaymentValidationError } from './payment-api.errors.js';
import { isApiPath, isApiQuery } from '../common/api-path.util.js';
import type { CreatePaymentInput, CreatePayoutInput, PaymentRequestOptions, PaymentRequestScope, RefundPaymentInput } from './payment-api.types.js';
import type { InputChecker } from './payment-input.validation.js';
import type { ServiceCall } from './payment-service-call.interface.js';
import type { WireCreatePaymentRequest, WirePayoutRequest, WireRefundRequest } from './payment-wire.types.js';

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
      for (let i = 0; i < input.splits.length && !check.full; i++) {
        const split = check.inputObject(`splits[${i}]`, input.splits[i], SPLIT_INPUT_FIELDS);
        if (split === undefined) continue; // a hole or not an object: recorded, nothing is sent
        splits.push({
          subaccount_id: check.identifier(`splits[${i}].subaccountId`, split.subaccountId, false) ?? '',
          amount: check.amount(`splits[${i}].amount`, split.amount) ?? '',
        });
      }
      body.splits = splits;
    }
  }
  return body;
}

/** The wire body of a refund, every input checked on the way (problems go to `check`). */
export function refundRequestBody(check: InputChecker, input: RefundPaymentInput | undefined): WireRefundRequest {
  check.inputObject('input', input, ['amount', 'reason', 'extra'], false);
  // a partial refund whose amount got lost (`amount: order.refundAmount`, undefined) must not
  // become a full one: only a left-out amount means "all"
  if (typeof input === 'object' && input !== null && 'amount' in input && input.amount == null) {
    check.add('amount', 'must be an amount; leave the field out to refund the whole payment');
  }
  const amount = check.amount('amount', input?.amount, false);
  const reason = check.optionalString('reason', input?.reason);
  const body: WireRefundRequest = { ...check.extra(input?.extra, { amount: 'amount', reason: 'reason' }) };
  if (amount !== undefined) body.amount = amount;
  if (reason !== undefined) body.reason = reason;
  return body;
}

/** The wire body of a payout, every input checked on the way (problems go to `check`). */
export function payoutRequestBody(check: InputChecker, input: CreatePayoutInput): WirePayoutRequest {
  check.inputObject('input', input, ['amount', 'currency', 'country', 'recipient', 'reference', 'extra']);
  const amount = check.amount('amount', input?.amount);
  const currency = check.currency('currency', input?.currency);
  const country = check.country('country', input?.country);
  const recipient = check.optionalObject('recipient', input?.recipient, true);
  const reference = check.optionalString('reference', input?.reference);
  const extra = check.extra(input?.extra, { amount: 'amount', currency: 'currency', country: 'country', recipient: 'recipient', reference: 'reference' });
  const body: WirePayoutRequest = { ...extra, amount: amount!, currency: currency!, recipient: recipient! };
  if (country !== undefined) body.country = country;
  if (reference !== undefined) body.reference = reference;
  return body;
}

/**
 * A call's body as sent, written once before anything is sent. Inputs were checked before (a
 * NaN, a BigInt or a cycle never gets here); one that still cannot be written (a `toJSON()` that
 * throws) is a client-side validation error, never a network error that "may have reached the service".
 */
export function writeRequestBody(call: ServiceCall, account: string): string | undefined {
  if (call.body === undefined) return undefined;
  // only the token call is form-encoded: its body is two strings
  if (call.encoding === 'form') return new URLSearchParams(call.body as Record<string, string>).toString();
  try {
    return JSON.stringify(call.body);
  } catch {
    throw new PaymentValidationError({
      code: PaymentErrorCode.VALIDATION_FAILED,
      message: `${call.method} ${call.path} was not sent: its body could not be written as JSON`,
      errors: { body: ['must be JSON data that can be written (a toJSON() threw)'] },
      method: call.method,
      path: call.path,
      idempotencyKey: call.idempotencyKey,
      account,
      clientSide: true,
    });
  }
}

/** The fields of `request()`'s options: a misspelt one (`data` for `body`) is refused, not ignored. */
const REQUEST_OPTION_FIELDS = ['method', 'path', 'query', 'body', 'scope', 'idempotent', 'authenticated', 'signal'];

/**
 * The call `request()` makes, every option checked on the way (problems go to `check`, which
 * throws before anything is sent). `defaultScope` picks the rate-limit scope when none is given.
 */
export function requestCall(
  check: InputChecker,
  options: PaymentRequestOptions,
  defaultScope: (method: string, path: unknown) => PaymentRequestScope,
): ServiceCall {
  check.inputObject('options', options, REQUEST_OPTION_FIELDS);
  const method = typeof options?.method === 'string' ? options.method.toUpperCase() : '';
  if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) check.add('method', 'must be GET, POST, PUT, PATCH or DELETE');
  if (!isApiPath(options?.path)) {
    check.add('path', 'must be a path under the API base starting with "/", without query, fragment, spaces, dot segments or encoded slashes');
  }
  for (const flag of ['idempotent', 'authenticated'] as const) {
    // a truthy string such as 'false' read from config would make a POST retryable
    if (options?.[flag] !== undefined && typeof options[flag] !== 'boolean') check.add(flag, 'must be true or false');
  }
  if (options?.query !== undefined && !isApiQuery(options.query)) {
    check.add('query', 'must be an object of string, finite number or boolean values (strings of well-formed Unicode)');
  }
  const body = check.requestBody('body', options?.body);
  const signal = check.signal(options?.signal);
  const scope = options?.scope ?? defaultScope(method, options?.path);
  if (!['read', 'create-payment', 'money-movement', 'none'].includes(scope)) {
    check.add('scope', "must be 'read', 'create-payment', 'money-movement' or 'none'");
  }
  check.throwIfInvalid('request');
  const idempotent = options.idempotent ?? method === 'GET';
  return {
    method,
    path: options.path,
    query: options.query,
    body,
    auth: options.authenticated === false ? 'none' : scope === 'create-payment' ? 'fresh' : 'cached',
    limit: scope,
    retry: idempotent ? (method === 'GET' ? 'safe' : 'keyed') : 'unsafe',
    signal,
  };
}
