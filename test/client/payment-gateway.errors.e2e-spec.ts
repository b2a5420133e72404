import 'reflect-metadata';
import { inspect } from 'node:util';
import {
  PaymentApiError,
  PaymentAuthenticationError,
  PaymentClientConfigurationError,
  PaymentInvalidStateError,
  PaymentNetworkError,
  PaymentNotFoundError,
  PaymentPayoutError,
  PaymentProviderError,
  PaymentServerError,
  PaymentValidationError,
} from '../../lib/client/payment-api.errors.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentHttpClient } from '../../lib/client/payment-http.client.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { captureLogs, rejectionOf, SANDBOX_CLIENT, startClientHarness, type ClientHarness } from '../support/client-simulator.js';

const recipient = { account_number: '0123456789', name: 'Jane' };

/**
 * Each call rejects with a client-side `PaymentValidationError` naming its field in `errors`
 * (`only` that one, or `among others`) and, with `inMessage`, in its message.
 */
async function expectEachRefusedClientSide(
  cases: Array<[Promise<unknown>, string]>,
  naming: 'only' | 'among others',
  { inMessage = false } = {},
): Promise<void> {
  for (const [call, field] of cases) {
    const error = await rejectionOf(call);
    expect(error).toBeInstanceOf(PaymentValidationError);
    expect(error.clientSide).toBe(true);
    if (naming === 'only') expect(Object.keys(error.errors)).toEqual([field]);
    else expect(Object.keys(error.errors)).toContain(field);
    if (inMessage) expect(error.message).toContain(field);
  }
}

describe('PaymentGatewayService errors (against the simulator)', () => {
  let h: ClientHarness;
  afterEach(async () => h?.close());

  it('maps each error family to its class with code, httpStatus and field errors', async () => {
    h = await startClientHarness();
    const notFound = await rejectionOf(h.client.getPaymentStatus('trx_missing'));
    expect(notFound).toBeInstanceOf(PaymentNotFoundError);
    expect(notFound).toMatchObject({ code: 'PAY_2001', httpStatus: 404 });
    expect(await rejectionOf(h.client.getRefund('rfd_missing'))).toMatchObject({ code: 'PAY_2005', constructor: PaymentNotFoundError });
    expect(await rejectionOf(h.client.getPayout('pyo_missing'))).toMatchObject({ code: 'PAY_3002', constructor: PaymentNotFoundError });

    const pending = await h.client.createPayment({ amount: '10', currency: 'USD' });
    const notCompleted = await rejectionOf(h.client.refundPayment(pending.trxId!));
    expect(notCompleted).toBeInstanceOf(PaymentInvalidStateError);
    expect(notCompleted).toMatchObject({ code: 'PAY_2004', httpStatus: 422 });

    h.sim.scriptNextPayment('no-api-refund');
    const manualOnly = await h.client.createPayment({ amount: '10', currency: 'USD' });
    expect(await rejectionOf(h.client.refundPayment(manualOnly.trxId!))).toMatchObject({ code: 'PAY_2006', constructor: PaymentInvalidStateError });

    const poor = await rejectionOf(h.client.createPayout({ amount: '5000', currency: 'USD', recipient }));
    expect(poor).toBeInstanceOf(PaymentPayoutError);
    expect(poor).toMatchObject({ code: 'PAY_3001', httpStatus: 422 });
    expect(poor.message).toContain('insufficient');

    h.sim.scriptNextPayment('provider-failure');
    const provider = await rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD' }));
    expect(provider).toBeInstanceOf(PaymentProviderError);
    expect(provider).toMatchObject({ code: 'PAY_5003', httpStatus: 500 });
    expect(provider.idempotencyKey).toEqual(expect.any(String));
    expect(h.sim.payments).toHaveLength(2);

    // the service's own validation (bypassing the client's checks through request())
    const invalid = await rejectionOf(
      h.client.request({ method: 'POST', path: '/payment/create', body: { amount: 'ten', currency: 'USD', idempotency_key: 'k' }, scope: 'create-payment' }),
    );
    expect(invalid).toBeInstanceOf(PaymentValidationError);
    expect(invalid).toMatchObject({ code: 'PAY_4000', httpStatus: 400, clientSide: false });
    expect(Object.keys(invalid.errors)).toContain('amount');
  });

  it('authentication failures: bad credentials, mode mismatch, inactive merchant, missing credentials', async () => {
    h = await startClientHarness({ clientSecret: 'wrong-secret' });
    const bad = await rejectionOf(h.client.listGateways());
    expect(bad).toBeInstanceOf(PaymentAuthenticationError);
    expect(bad).toMatchObject({ code: 'PAY_1004', httpStatus: 401 });
    // a payment's token request failed: the error still names the payment's key, on a copy
    const [a, b] = await Promise.all([
      rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: 'order-a' })),
      rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: 'order-b' })),
    ]);
    expect(a).toBeInstanceOf(PaymentAuthenticationError);
    expect([a.code, a.idempotencyKey, b.code, b.idempotencyKey]).toEqual(['PAY_1004', 'order-a', 'PAY_1004', 'order-b']);
    expect(a.toJSON()).toMatchObject({ idempotencyKey: 'order-a', code: 'PAY_1004' });
    await h.close();

    h = await startClientHarness({ environment: 'live' });
    expect(await rejectionOf(h.client.listGateways())).toMatchObject({ code: 'PAY_1005', constructor: PaymentAuthenticationError });
    await h.close();

    h = await startClientHarness();
    h.sim.setMerchantActive(1, false);
    expect(await rejectionOf(h.client.listGateways())).toMatchObject({ code: 'PAY_6001', constructor: PaymentAuthenticationError });

    const noCredentials = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: h.sim.url }));
    try {
      const error = await rejectionOf(noCredentials.listGateways());
      expect(error).toBeInstanceOf(PaymentClientConfigurationError);
      expect(error.message).toContain('PAYMENT_CLIENT_ID');
    } finally {
      noCredentials.onApplicationShutdown();
    }
  });

  it('bad input throws a client-side PaymentValidationError naming the field and sends nothing', async () => {
    h = await startClientHarness();
    const cases: Array<[Promise<unknown>, string]> = [
      [h.client.createPayment({ amount: '-1', currency: 'USD' }), 'amount'],
      [h.client.createPayment({ amount: '1.123456789', currency: 'USD' }), 'amount'],
      [h.client.createPayment({ amount: 'NaN', currency: 'USD' }), 'amount'],
      [h.client.createPayment({ amount: '1', currency: 'usd' }), 'currency'],
      [h.client.createPayment({ amount: '1', currency: 'XYZ' }), 'currency'],
      [h.client.createPayment({ amount: '1', currency: 'USD', country: 'USA' }), 'country'],
      [h.client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: '' }), 'idempotencyKey'],
      [h.client.createPayment({ amount: '1', currency: 'USD', splits: [{ subaccountId: 's', amount: '-2' }] }), 'splits[0].amount'],
      [h.client.refundPayment('trx_1', { amount: '0' }), 'amount'],
      [h.client.refundPayment('', {}), 'trxId'],
      [h.client.createPayout({ amount: '1', currency: 'USD', country: 'ZZ', recipient }), 'country'],
      [h.client.createPayout({ amount: '1', currency: 'USD' } as never), 'recipient'],
      [h.client.getPaymentStatus('a\nb'), 'trxId'],
      [h.client.request({ method: 'GET', path: 'no-slash' }), 'path'],
      [h.client.request({ method: 'GET', path: '/payment/../../admin' }), 'path'],
      [h.client.refundPayment('..', { amount: '1' }), 'trxId'],
      [h.client.refundPayment('x/../../payout', { amount: '1' }), 'trxId'],
      [h.client.getRefund('r\\1'), 'refundUid'],
      [h.client.getPayout('.'), 'payoutUid'],
      // lone surrogates cannot be URL-encoded (a URIError, or a request that never leaves)
      [h.client.refundPayment('trx\ud800', { amount: '1' }), 'trxId'],
      [h.client.getPaymentStatus('trx\udc00'), 'trxId'],
      [h.client.getPayout('\ud800po'), 'payoutUid'],
      [h.client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: 'order\udbff' }), 'idempotencyKey'],
      [h.client.request({ method: 'GET', path: '/payment/\ud800' }), 'path'],
      [h.client.request({ method: 'GET', path: '/payments/gateways', query: { q: 'x\udfff' } }), 'query'],
    ];
    await expectEachRefusedClientSide(cases, 'among others', { inMessage: true });
    expect(h.sim.requests).toHaveLength(0);
  });

  it('an id sent in the body only (an idempotency key, a split subaccount) may hold "/" or "\\": the one-segment rule is for ids in a path', async () => {
    h = await startClientHarness();
    const created = await h.client.createPayment({ amount: '2', currency: 'USD' }, { idempotencyKey: 'shop/2026\\0001' });
    expect((await h.client.createPayment({ amount: '2', currency: 'USD' }, { idempotencyKey: 'shop/2026\\0001' })).trxId).toBe(created.trxId);
    expect(h.calls('/payment/create').map((r) => (r.body as { idempotency_key?: string }).idempotency_key)).toEqual(['shop/2026\\0001', 'shop/2026\\0001']);
    // not refused client-side: sent, and the service judges the id
    await h.client.createPayment({ amount: '2', currency: 'USD', splits: [{ subaccountId: 'team/a', amount: '1' }] }).catch((error: { clientSide?: boolean }) => {
      expect(error.clientSide).not.toBe(true);
    });
    expect((h.calls('/payment/create')[2]?.body as { splits?: Array<{ subaccount_id?: string }> }).splits?.[0]?.subaccount_id).toBe('team/a');
    // the status call names the payment in its query: a trxId with a slash is asked for (reconciliation of its events too)
    await expect(h.client.getPaymentStatus('trx/2026\\7')).rejects.toMatchObject({ code: 'PAY_2001', httpStatus: 404 });
    expect(h.calls('/payment/status').at(-1)?.query).toEqual({ trx_id: 'trx/2026\\7' });
  });

  it('money inputs that would change what is sent are refused, not dropped or overwritten: nothing sent', async () => {
    h = await startClientHarness();
    const cases: Array<[Promise<unknown>, string]> = [
      // a key given in extra was overwritten by a fresh UUID: two calls made two payments
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { idempotency_key: 'order-42' } }), 'extra.idempotency_key'],
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { return_url: 'https://shop.test' } }), 'extra.return_url'],
      [h.client.createPayment({ amount: '1', currency: 'USD', returnURL: 'https://shop.test' } as never), 'returnURL'],
      [h.client.createPayment({ amount: '1', currency: 'USD' }, null as never), 'options'],
      [h.client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: 'k', key: 'k' } as never), 'key'],
      // a key whose value got lost (`{ idempotencyKey: order.paymentKey }`) made a new key per call:
      // a retry made a second payment; only a left-out key is generated
      [h.client.createPayment({ amount: '1', currency: 'USD' }, { idempotencyKey: undefined }), 'idempotencyKey'],
      // map() skipped the hole (sent as null); a misspelt split field was dropped
      [h.client.createPayment({ amount: '2', currency: 'USD', splits: [, { subaccountId: 'sa', amount: '1' }] as never }), 'splits[0]'],
      [h.client.createPayment({ amount: '2', currency: 'USD', splits: [null as never] }), 'splits[0]'],
      [h.client.createPayment({ amount: '2', currency: 'USD', splits: [{ subaccountId: 'sa', amont: '1' } as never] }), 'splits[0].amont'],
      // each of these refunded the whole payment
      [h.client.refundPayment('trx_1', '2.50' as never), 'input'],
      [h.client.refundPayment('trx_1', { amount: null } as never), 'amount'],
      [h.client.refundPayment('trx_1', { amount: undefined, reason: 'partial' }), 'amount'],
      [h.client.refundPayment('trx_1', { ammount: '1' } as never), 'ammount'],
      // sent without the amount checks
      [h.client.refundPayment('trx_1', { extra: { amount: '-5' } }), 'extra.amount'],
      [h.client.createPayout({ amount: '1', currency: 'USD', recipient, extra: { amount: '9' } }), 'extra.amount'],
      [h.client.createPayout({ amount: '1', currency: 'USD', recipient, refrence: 'r' } as never), 'refrence'],
      // a truthy string made a payout retryable after the service may have acted
      [h.client.request({ method: 'POST', path: '/payout', body: {}, idempotent: 'false' as never }), 'idempotent'],
      [h.client.request({ method: 'GET', path: '/payments/gateways', authenticated: 0 as never }), 'authenticated'],
      [h.client.request({ method: 'POST', path: '/payout', query: 'a=b' as never }), 'query'],
      // decoded by the URL parser into dot segments: the bearer token would leave the API base
      [h.client.request({ method: 'GET', path: '/%2e%2e/%2E%2e/x' }), 'path'],
      [h.client.request({ method: 'GET', path: '/payment/.%2e/admin' }), 'path'],
      // dot segments once a proxy decodes the encoded slashes
      [h.client.request({ method: 'POST', path: `/subaccount/${encodeURIComponent('../../payout')}/x`, body: {} }), 'path'],
      [h.client.request({ method: 'GET', path: '/subaccount/..%5c..%5Cpayout' }), 'path'],
    ];
    await expectEachRefusedClientSide(cases, 'among others');
    expect(h.sim.requests).toHaveLength(0);
    const explained = await rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD', extra: { idempotency_key: 'k' } }));
    expect(explained.message).toContain('use the idempotencyKey option instead');
    // only the module's own wire fields are refused: a field named like an Object method is just sent
    await h.client.createPayment({ amount: '1', currency: 'USD', extra: { toString: 'x', constructor: 'y' } });
    expect(h.sim.requests.find((r) => r.route === '/payment/create')?.body).toMatchObject({ toString: 'x', constructor: 'y' });
  });

  it('an input with a million bad parts is refused at once, naming the first 100 fields; nothing sent', async () => {
    h = await startClientHarness();
    const holes: unknown[] = [];
    holes.length = 2 ** 32 - 1; // costs nothing to make; checked to its end it ran the process out of memory
    const started = performance.now();
    const refusals = [
      await rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD', splits: holes as never })),
      // made a validation message of 27 MB in 5 s
      await rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD', splits: Array.from({ length: 1_000_000 }, () => null) as never })),
      await rejectionOf(h.client.createPayment({ amount: '1', currency: 'USD', ...Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`f${i}`, 1])) })),
    ];
    expect(performance.now() - started).toBeLessThan(3_000);
    for (const error of refusals) {
      expect(error).toBeInstanceOf(PaymentValidationError);
      expect(error).toMatchObject({ clientSide: true });
      expect(Object.keys((error as PaymentValidationError).errors ?? {})).toHaveLength(100);
      expect(error.message.length).toBeLessThan(20_000);
      expect(error.message).toMatch(/\(the first 100 fields with problems; there may be more\)$/);
    }
    expect(Object.keys((refusals[0] as PaymentValidationError).errors ?? {})).toEqual(Array.from({ length: 100 }, (_, i) => `splits[${i}]`));
    expect(h.sim.requests).toHaveLength(0);
  });

  it('data JSON would not send as written (NaN, Infinity, functions, Maps, "__proto__" keys, holes) is refused, not sent as null or dropped', async () => {
    h = await startClientHarness();
    const protoKey = JSON.parse('{"__proto__":{"amount":"999"}}') as Record<string, unknown>;
    const cases: Array<[Promise<unknown>, string]> = [
      // sent as {"account":null,"bank":null}, and accepted
      [h.client.createPayout({ amount: '1', currency: 'USD', recipient: { account: Number.NaN, bank: 'b' } }), 'recipient.account'],
      [h.client.createPayout({ amount: '1', currency: 'USD', recipient: { account: '1', bank: Infinity } }), 'recipient.bank'],
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { fee: Number.NaN } }), 'extra.fee'],
      [h.client.createPayment({ amount: '1', currency: 'USD', customer: { name: 'x', notify: () => true } }), 'customer.notify'],
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { tags: ['a', undefined] } }), 'extra.tags[1]'],
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { lines: new Map([['a', 1]]) } }), 'extra.lines'],
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { tags: new Set(['a']), } }), 'extra.tags'],
      // went out beside the amount the module wrote, past the check of the fields it writes
      [h.client.refundPayment('trx_1', { amount: '1', extra: protoKey }), 'extra.__proto__'],
      // request(): a body that is no object, a misspelt option, a query number JSON cannot say
      [h.client.request({ method: 'POST', path: '/payout', body: 'hello' }), 'body'],
      [h.client.request({ method: 'POST', path: '/payout', body: Number.NaN }), 'body'],
      [h.client.request({ method: 'POST', path: '/payout', body: () => ({}) }), 'body'],
      [h.client.request({ method: 'POST', path: '/payout', body: { amount: Infinity } }), 'body.amount'],
      [h.client.request({ method: 'POST', path: '/subaccount/sa_1/payout', data: { amount: '10' } } as never), 'data'],
      [h.client.request({ method: 'GET', path: '/payments/gateways', query: { amount: Number.NaN } }), 'query'],
    ];
    await expectEachRefusedClientSide(cases, 'only');
    expect(h.sim.requests).toHaveLength(0);
    // what JSON writes as it is stays allowed: a Date, null, a left-out (undefined) field, a DTO (its own
    // fields), an object of another realm (structuredClone, a fetch answer's json())
    class CustomerDto {
      name = 'Jane';
      email = 'jane@example.com';
    }
    await h.client.createPayment({ amount: '1', currency: 'USD', customer: new CustomerDto() as never, extra: { at: new Date(0), note: null, skip: undefined, meta: structuredClone({ a: 1 }) } });
    expect(h.sim.requests.find((r) => r.route === '/payment/create')?.body).toMatchObject({
      at: '1970-01-01T00:00:00.000Z',
      note: null,
      meta: { a: 1 },
      customer: { name: 'Jane', email: 'jane@example.com' },
    });
  });

  it('an optional input given undefined (a `string | undefined` from the environment) is left out, as its type allows', async () => {
    h = await startClientHarness();
    const u = undefined;
    const bodyOf = (route: string) => h.sim.requests.filter((r) => r.route === route && r.method === 'POST').at(-1)?.body as Record<string, unknown>;
    const payment = await h.client.createPayment(
      { amount: '1', currency: 'USD', custom: u, country: u, gateway: u, returnUrl: u, cancelUrl: u, customer: u, splits: u, extra: u },
      { idempotencyKey: 'order-1', signal: u },
    );
    expect(bodyOf('/payment/create')).toEqual({ amount: '1.00000000', currency: 'USD', idempotency_key: 'order-1' });
    // the payment is still pending (the service refuses the refund): the body sent is what counts
    await h.client.refundPayment(payment.trxId!, { reason: u, extra: u }).catch(() => undefined);
    expect(Object.keys(bodyOf(`/payment/${payment.trxId}/refund`))).toEqual([]);
    await h.client.createPayout({ amount: '1', currency: 'USD', recipient: { account_number: '1' }, country: u, reference: u, extra: u });
    expect(Object.keys(bodyOf('/payout')).sort()).toEqual(['amount', 'currency', 'recipient']);
    await expect(h.client.request({ method: 'GET', path: '/payments/gateways', query: u, scope: u, idempotent: u, authenticated: u, signal: u })).resolves.toMatchObject({ httpStatus: 200 });
  });

  it('a misspelt field named like an Object member is a validation error naming it, never a TypeError', async () => {
    h = await startClientHarness();
    for (const key of ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__']) {
      const input = JSON.parse(`{"amount":"1","currency":"USD","${key}":"x"}`) as never;
      const error = await rejectionOf(h.client.createPayment(input));
      expect(error).toBeInstanceOf(PaymentValidationError);
      expect(Object.keys(error.errors)).toEqual([key]);
      const refund = await rejectionOf(h.client.refundPayment('trx_1', JSON.parse(`{"${key}":"1"}`) as never));
      expect(refund).toBeInstanceOf(PaymentValidationError);
    }
    expect(h.sim.requests).toHaveLength(0);
  });

  it('a request axios refuses before opening a connection is "never reached the service", not "may have"', async () => {
    h = await startClientHarness();
    const http = new PaymentHttpClient(`${h.sim.url}/sandbox/api/v1`, 1_000);
    try {
      const error = await rejectionOf(http.send({ method: 'POST', path: '/payout', query: 'a=b' as never, body: '{}' }));
      expect(error).toBeInstanceOf(PaymentNetworkError);
      expect(error.mayHaveReachedService).toBe(false);
      expect(error.message).toContain('never reached the service');
    } finally {
      http.close();
    }
    expect(h.sim.requests).toHaveLength(0);
  });

  it('a body JSON cannot write (BigInt, circular) is a client-side validation error: nothing sent, never "may have reached the service"', async () => {
    h = await startClientHarness();
    const circular: Record<string, unknown> = { note: 'loop' };
    circular.self = circular;
    const cases: Array<[Promise<unknown>, string]> = [
      [h.client.createPayment({ amount: '1', currency: 'USD', extra: { big: 10n } }), 'extra.big'],
      [h.client.refundPayment('trx_1', { amount: '1', extra: circular }), 'extra.self'],
      [h.client.createPayout({ amount: '1', currency: 'USD', recipient: { account_number: 10n } }), 'recipient.account_number'],
      [h.client.request({ method: 'POST', path: '/payment/trx_1/refund', body: { amount: 10n } }), 'body.amount'],
    ];
    await expectEachRefusedClientSide(cases, 'only');
    // refused before a token was even asked for
    expect(h.sim.requests).toHaveLength(0);
  });

  it('writes query values percent-encoded, as the service reads them back; undefined values are left out', async () => {
    h = await startClientHarness();
    await h.client.request({ method: 'GET', path: '/payments/gateways', query: { q: 'a b&c=d/é+?#', n: 5, flag: false, skip: undefined } });
    expect(h.sim.requests.find((r) => r.route === '/payments/gateways')?.query).toEqual({ q: 'a b&c=d/é+?#', n: '5', flag: 'false' });
  });

  it('keeps unknown response fields on results', async () => {
    h = await startClientHarness();
    h.sim.scriptNextPayment('succeed');
    const payment = await h.client.createPayment({ amount: '10', currency: 'USD', custom: 'o-9' });
    const status = await h.client.getPaymentStatus(payment.trxId!);
    expect(status).toMatchObject({ trxId: payment.trxId, status: 'SUCCESS', custom: 'o-9', currency: 'USD' });
    // fields the spec does not list pass through untouched
    expect(status).toMatchObject({ gateway: 'card', refundedAmount: '0.00000000', createdAt: expect.any(String) });
    expect(payment).toMatchObject({ gateway: 'card', updatedAt: expect.any(String) });
    const refund = await h.client.refundPayment(payment.trxId!, { amount: '2.5', reason: 'damaged' });
    expect(refund).toMatchObject({ trxId: payment.trxId, amount: '2.50000000', httpStatus: 201 });
    expect(await h.client.getRefund(refund.refundUid!)).toMatchObject({ refundUid: refund.refundUid });
    const payout = await h.client.createPayout({ amount: '3', currency: 'USD', recipient, reference: 'r-1' });
    expect(payout).toMatchObject({ pendingApproval: false, httpStatus: 201 });
    expect(await h.client.getPayout(payout.payoutUid!)).toMatchObject({ payoutUid: payout.payoutUid });
    const subaccounts = await h.client.request<unknown[]>({ method: 'GET', path: '/subaccounts', scope: 'money-movement' });
    expect(subaccounts.httpStatus).toBe(200);
  });

  it('createPayout answers pendingApproval: true on 202', async () => {
    h = await startClientHarness({}, {
      merchants: [{ merchantId: 1, ...SANDBOX_CLIENT, mode: 'sandbox', payoutApprovalRequired: true }],
    });
    const payout = await h.client.createPayout({ amount: '3', currency: 'USD', recipient });
    expect(payout).toMatchObject({ pendingApproval: true, httpStatus: 202 });
  });

  it("keeps an answer's first 100 field errors with 10 messages each, scrubbed (a misbehaving server's huge list must not stall the process)", async () => {
    h = await startClientHarness();
    const errors: Record<string, string[]> = { [`client_secret_${SANDBOX_CLIENT.clientSecret}`]: Array.from({ length: 50 }, (_, i) => `bad ${i}`) };
    for (let i = 0; i < 1_000; i++) errors[`field_${i}`] = [`message of ${i}`];
    h.sim.injectFault({ path: '/payments/gateways', kind: 'rewrite', rewrite: () => ({ status: 400, body: { status: 'error', code: 'PAY_4000', message: 'invalid', errors } }) });
    const error = await rejectionOf(h.client.listGateways());
    expect(error).toBeInstanceOf(PaymentValidationError);
    const fields = Object.keys(error.errors);
    expect(fields).toHaveLength(100);
    expect(fields[0]).toBe('client_secret_[redacted]');
    expect(error.errors[fields[0]!]).toEqual(Array.from({ length: 10 }, (_, i) => `bad ${i}`));
    expect(fields[99]).toBe('field_98');
    expect(error.errors['field_98']).toEqual(['message of 98']);
  });

  it('never puts the client secret, webhook secret or bearer token in errors or logs', async () => {
    h = await startClientHarness({ maxRetries: 1 });
    const secrets = [SANDBOX_CLIENT.clientSecret, SANDBOX_CLIENT.webhookSecret];
    let tokens: string[] = [];
    const { lines, error } = await captureLogs(async () => {
      const errors: unknown[] = [];
      await h.client.listGateways();
      errors.push(await rejectionOf(h.client.getPaymentStatus('trx_missing')));
      h.sim.injectFault({ path: '/payments/gateways', kind: 'reset', times: 2 });
      errors.push(await rejectionOf(h.client.listGateways()));
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 503, times: 2 });
      errors.push(await rejectionOf(h.client.listGateways()));
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', code: 'PAY_1003', times: 5 });
      errors.push(await rejectionOf(h.client.listGateways()));
      tokens = h.sim.requests.map((r) => String(r.headers.authorization ?? '').replace(/^Bearer /, '')).filter(Boolean);
      expect(tokens.length).toBeGreaterThan(0);
      for (const error of errors) {
        expect(error).toBeInstanceOf(PaymentApiError);
        const e = error as PaymentApiError;
        const dump = [e.message, e.stack, JSON.stringify(e), inspect(e, { depth: 10, showHidden: true }), inspect((e as { cause?: unknown }).cause)].join('\n');
        for (const s of [...secrets, ...tokens]) expect(dump).not.toContain(s);
        expect(dump).not.toMatch(/authorization/i);
      }
      expect(errors[1]).toBeInstanceOf(PaymentNetworkError);
      expect(errors[2]).toBeInstanceOf(PaymentServerError);
    });
    expect(error).toBeUndefined();
    expect(lines.length).toBeGreaterThan(0);
    const logText = lines.join('\n');
    for (const s of [...secrets, ...tokens]) expect(logText).not.toContain(s);
  });
});
