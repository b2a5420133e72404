import { PaymentValidationError } from '../../lib/client/payment-api.errors.js';
import { InputChecker, normalizeAmount } from '../../lib/client/payment-input.validation.js';

describe('normalizeAmount', () => {
  it.each([
    ['10', '10.00000000'],
    ['10.5', '10.50000000'],
    ['0010.12345678', '10.12345678'],
    ['0.00000001', '0.00000001'],
    [10, '10.00000000'],
    [10.25, '10.25000000'],
  ])('%p → %p', (input, expected) => {
    expect(normalizeAmount(input)).toBe(expected);
  });

  it.each([
    ['-1'], [-1], ['0'], [0], ['0.00'], [Number.NaN], [Infinity], ['1e3'], [1e21], ['1.123456789'], [0.1 + 0.2],
    [''], [' 10'], ['10,5'], ['abc'], ['.5'], ['5.'], [null], [{}], [true],
  ])('rejects %p', (input) => {
    expect(typeof normalizeAmount(input)).toBe('object');
  });
});

describe('InputChecker', () => {
  it('accepts ISO 4217 currencies and ISO 3166-1 alpha-2 countries', () => {
    const check = new InputChecker();
    expect(check.currency('currency', 'USD')).toBe('USD');
    expect(check.currency('currency', 'BDT')).toBe('BDT');
    expect(check.country('country', 'BD')).toBe('BD');
    expect(() => check.throwIfInvalid('x')).not.toThrow();
  });

  it('names every bad field in one client-side PaymentValidationError', () => {
    const check = new InputChecker();
    check.amount('amount', '-5');
    check.currency('currency', 'usd');
    check.currency('currency2', 'ABC');
    check.country('country', 'XX');
    check.identifier('trxId', '');
    let thrown: unknown;
    try {
      check.throwIfInvalid('createPayment');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(PaymentValidationError);
    const error = thrown as PaymentValidationError;
    expect(error.code).toBe('PAY_4000');
    expect(error.clientSide).toBe(true);
    expect(error.httpStatus).toBeUndefined();
    expect(Object.keys(error.errors).sort()).toEqual(['amount', 'country', 'currency', 'currency2', 'trxId']);
    expect(error.message).toContain('amount');
    expect(error.message).toContain('nothing was sent');
  });
});
