import { PaymentRateLimitError, PaymentServerError } from '../../lib/client/payment-api.errors.js';
import { PaymentTokenManager, parseTokenData } from '../../lib/client/payment-token.manager.js';
import { ClientFakeClock } from '../support/client-fake-clock.js';

const tokenOptions = {
  tokenFields: ['access_token', 'accessToken', 'token'],
  expiresInField: 'expires_in',
  defaultExpiresInSeconds: 600,
  maxExpiresInSeconds: 600,
  refreshMarginSeconds: 60,
};

describe('PaymentTokenManager (fake clock)', () => {
  function setup() {
    const clock = new ClientFakeClock();
    let issued = 0;
    const resolvers: Array<() => void> = [];
    const manual = { on: false };
    const manager = new PaymentTokenManager(
      () =>
        new Promise((resolve) => {
          const n = ++issued;
          const done = () => resolve({ token: `tok-${n}`, expiresInSeconds: 600 });
          if (manual.on) resolvers.push(done);
          else done();
        }),
      clock,
      tokenOptions,
    );
    return { clock, manager, count: () => issued, resolvers, manual };
  }

  it('reuses the cached token until one minute before expiry', async () => {
    const { clock, manager, count } = setup();
    expect(await manager.getToken()).toBe('tok-1');
    clock.advance(8 * 60_000);
    expect(await manager.getToken()).toBe('tok-1');
    clock.advance(60_000 + 1); // 9 min + 1 ms: inside the margin
    expect(await manager.getToken()).toBe('tok-2');
    expect(count()).toBe(2);
  });

  it('concurrent callers share one in-flight token request', async () => {
    const { manager, count, resolvers, manual } = setup();
    manual.on = true;
    const all = Promise.all(Array.from({ length: 10 }, () => manager.getToken()));
    expect(count()).toBe(1);
    resolvers.forEach((r) => r());
    expect(new Set(await all)).toEqual(new Set(['tok-1']));
  });

  it('fresh tokens are never shared and refresh the cache; invalidate drops a rejected token', async () => {
    const { manager, count } = setup();
    expect(await manager.getFreshToken()).toBe('tok-1');
    expect(await manager.getFreshToken()).toBe('tok-2');
    expect(await manager.getToken()).toBe('tok-2');
    manager.invalidate('tok-2');
    expect(await manager.getToken()).toBe('tok-3');
    expect(count()).toBe(3);
  });
});

describe("PaymentTokenManager.checkToken: a failed health check's hold", () => {
  function refusing(retryAfterSeconds: number | undefined) {
    const clock = new ClientFakeClock();
    let asked = 0;
    const manager = new PaymentTokenManager(
      async () => {
        asked++;
        throw new PaymentRateLimitError({ message: 'Too many token requests', code: 'RATE_LIMITED', httpStatus: 429, retryAfterSeconds });
      },
      clock,
      tokenOptions,
    );
    return { clock, manager, asked: () => asked };
  }

  it('answers a refusal again for 30 s, or as long as its Retry-After asked (up to 10 minutes), without a new token request', async () => {
    for (const [retryAfterSeconds, holdMs] of [[undefined, 30_000], [5, 30_000], [90, 90_000], [86_400, 600_000]] as const) {
      const { clock, manager, asked } = refusing(retryAfterSeconds);
      await expect(manager.checkToken()).rejects.toBeInstanceOf(PaymentRateLimitError);
      clock.advance(holdMs - 1);
      await expect(manager.checkToken()).rejects.toBeInstanceOf(PaymentRateLimitError);
      expect([retryAfterSeconds, asked()]).toEqual([retryAfterSeconds, 1]);
      clock.advance(1);
      await expect(manager.checkToken()).rejects.toBeInstanceOf(PaymentRateLimitError);
      expect([retryAfterSeconds, asked()]).toEqual([retryAfterSeconds, 2]);
    }
  });
});

describe('parseTokenData', () => {
  it('accepts access_token, accessToken or token; expiry defaults to 10 minutes', () => {
    expect(parseTokenData({ access_token: 'a', expires_in: 300 }, tokenOptions, '/t')).toEqual({ token: 'a', expiresInSeconds: 300 });
    expect(parseTokenData({ accessToken: 'b' }, tokenOptions, '/t')).toEqual({ token: 'b', expiresInSeconds: 600 });
    expect(parseTokenData({ token: 'c', expires_in: '120' }, tokenOptions, '/t')).toEqual({ token: 'c', expiresInSeconds: 120 });
  });

  it('cuts a lifetime longer than maxExpiresInSeconds (the service documents 10 minutes)', () => {
    expect(parseTokenData({ access_token: 'a', expires_in: 86_400 }, tokenOptions, '/t')).toEqual({ token: 'a', expiresInSeconds: 600 });
    expect(parseTokenData({ access_token: 'a', expires_in: 7200 }, { ...tokenOptions, maxExpiresInSeconds: 3600 }, '/t').expiresInSeconds).toBe(3600);
  });

  it('throws a typed error naming the fields when no token is present', () => {
    expect(() => parseTokenData({ nope: 1 }, tokenOptions, '/t')).toThrow(PaymentServerError);
    expect(() => parseTokenData(null, tokenOptions, '/t')).toThrow(/access_token/);
  });
});
