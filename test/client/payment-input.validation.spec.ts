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
    [Number.MAX_SAFE_INTEGER, '9007199254740991.00000000'],
    [123456789012.345, '123456789012.34500000'],
    // String() writes these with an exponent (1e-8, 5e-7)
    [0.00000001, '0.00000001'],
    [0.0000005, '0.00000050'],
    [1.5e-7, '0.00000015'],
  ])('%p → %p', (input, expected) => {
    expect(normalizeAmount(input)).toBe(expected);
  });

  it.each([
    ['-1'], [-1], ['0'], [0], ['0.00'], [Number.NaN], [Infinity], ['1e3'], [1e21], ['1.123456789'], [0.1 + 0.2],
    [1e-9], [1.5e-8], [-1e-8], [''], [' 10'], ['10,5'], ['abc'], ['.5'], ['5.'], [null], [{}], [true],
  ])('rejects %p', (input) => {
    expect(typeof normalizeAmount(input)).toBe('object');
  });

  it.each([
    // parsed as 12345678901234568: sending it would move money nobody asked for
    [12345678901234567],
    // parsed as 1234567890.1234567 (7 decimals, so it would pass the decimals check)
    [1234567890.12345678],
    [2 ** 60],
  ])('refuses the number %p, which may not be what was written, and says to pass a string', (input) => {
    expect(normalizeAmount(input)).toEqual({ problem: expect.stringContaining('pass it as a string') });
  });
  it('says what is wrong with an amount of too many digits: the integer part, or the decimals', () => {
    expect(normalizeAmount('1234567890123456789')).toEqual({ problem: expect.stringContaining('at most 18 digits before the decimal point') });
    expect(normalizeAmount('1.123456789')).toEqual({ problem: expect.stringContaining('at most 8 decimals') });
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
