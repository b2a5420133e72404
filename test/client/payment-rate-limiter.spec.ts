import { PaymentIpRateLimits, PaymentRateLimiter, SlidingWindowLimiter } from '../../lib/client/payment-rate-limiter.js';
import { ClientFakeClock, flushMicrotasks } from '../support/client-fake-clock.js';

describe('SlidingWindowLimiter (fake clock)', () => {
  it('lets `limit` requests through per rolling window and queues the rest in order', async () => {
    const clock = new ClientFakeClock();
    const limiter = new SlidingWindowLimiter(3, 60_000, clock);
    const granted: number[] = [];
    for (let i = 0; i < 7; i++) {
      void limiter.acquire().then((release) => {
        granted.push(i);
        release();
      });
    }
    await flushMicrotasks();
    expect(granted).toEqual([0, 1, 2]);
    clock.advance(59_000);
    await flushMicrotasks();
    expect(granted).toEqual([0, 1, 2]);
    clock.advance(1_100);
    await flushMicrotasks();
    expect(granted).toEqual([0, 1, 2, 3, 4, 5]);
    clock.advance(60_100);
    await flushMicrotasks();
    expect(granted).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('counts the window from when a request finished, not when it started', async () => {
    const clock = new ClientFakeClock();
    const limiter = new SlidingWindowLimiter(1, 60_000, clock);
    const first = await limiter.acquire();
    let secondGranted = false;
    void limiter.acquire().then(() => (secondGranted = true));
    clock.advance(30_000); // slow answer
    first();
    clock.advance(40_000); // 70 s after the start, only 40 s after the end
    await flushMicrotasks();
    expect(secondGranted).toBe(false);
    clock.advance(20_100);
    await flushMicrotasks();
    expect(secondGranted).toBe(true);
  });

  it('a slot released with holdMs counts from that much later (request given up on)', async () => {
    const clock = new ClientFakeClock();
    const limiter = new SlidingWindowLimiter(1, 60_000, clock);
    (await limiter.acquire())(5_000);
    let next = false;
    void limiter.acquire().then(() => (next = true));
    clock.advance(60_100);
    await flushMicrotasks();
    expect(next).toBe(false);
    clock.advance(5_000);
    await flushMicrotasks();
    expect(next).toBe(true);
  });

  it('its wait for the window ends when the last queued caller leaves (aborted, app.close()): no timer outlives the callers', async () => {
    const clock = new ClientFakeClock();
    const limiter = new SlidingWindowLimiter(1, 60_000, clock);
    (await limiter.acquire())();
    const callers = [new AbortController(), new AbortController()];
    const outcomes = callers.map((caller) => limiter.acquire(caller.signal).then(() => 'granted', () => 'aborted'));
    await flushMicrotasks();
    expect(clock.pendingSleepers).toBe(1); // the pump waits for the window to open
    callers[0].abort();
    await flushMicrotasks();
    expect(clock.pendingSleepers).toBe(1); // one caller still waits for it
    callers[1].abort();
    expect(await Promise.all(outcomes)).toEqual(['aborted', 'aborted']);
    await flushMicrotasks();
    expect(clock.pendingSleepers).toBe(0);
    // the window still holds for the next caller
    let granted = false;
    void limiter.acquire().then(() => (granted = true));
    await flushMicrotasks();
    expect(granted).toBe(false);
    clock.advance(60_100);
    await flushMicrotasks();
    expect(granted).toBe(true);
  });

  it('a burst of 100 never has more than `limit` requests inside any window', async () => {
    const clock = new ClientFakeClock(0, true);
    const limiter = new SlidingWindowLimiter(60, 60_000, clock);
    const finished: number[] = [];
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        const release = await limiter.acquire();
        finished.push(clock.now());
        release();
      }),
    );
    expect(finished).toHaveLength(100);
    for (const t of finished) {
      expect(finished.filter((u) => u > t - 60_000 && u <= t).length).toBeLessThanOrEqual(60);
    }
  });
});

describe('PaymentRateLimiter', () => {
  const limits = { tokenPerMinute: 1, createPaymentPerMinute: 1, readsPerMinute: 2, moneyMovementPerMinute: 1 };

  it('keeps separate buckets per scope and key; none/false do not wait', async () => {
    const clock = new ClientFakeClock();
    const limiter = new PaymentRateLimiter(limits, clock);
    (await limiter.acquire('read', 'tokenA'))();
    (await limiter.acquire('read', 'tokenA'))();
    (await limiter.acquire('read', 'tokenB'))(); // new token, new bucket (per access token)
    (await limiter.acquire('money-movement', 'client'))();
    (await limiter.acquire('none', ''))();
    let third = false;
    void limiter.acquire('read', 'tokenA').then(() => (third = true));
    await flushMicrotasks();
    expect(third).toBe(false);
    clock.advance(60_100);
    await flushMicrotasks();
    expect(third).toBe(true);

    const off = new PaymentRateLimiter(false, clock);
    for (let i = 0; i < 10; i++) (await off.acquire('read', 'x'))();
  });

  it('drops buckets of tokens that are no longer used', async () => {
    const clock = new ClientFakeClock();
    const limiter = new PaymentRateLimiter(limits, clock);
    (await limiter.acquire('read', 'old-token'))();
    clock.advance(120_000);
    (await limiter.acquire('read', 'new-token'))();
    expect(limiter.bucketCount).toBe(1);
  });
});

describe('PaymentIpRateLimits (shared by the accounts of an app)', () => {
  const limits = { tokenPerMinute: 1, createPaymentPerMinute: 1, readsPerMinute: 1, moneyMovementPerMinute: 1 };

  it('two clients share the token bucket of one service host, and keep their other buckets', async () => {
    const clock = new ClientFakeClock();
    const perIp = new PaymentIpRateLimits();
    const eu = new PaymentRateLimiter(limits, clock, perIp);
    const us = new PaymentRateLimiter(limits, clock, perIp);
    (await eu.acquire('token', 'https://pay.example'))();
    (await us.acquire('token', 'https://other.example'))(); // another host: its own bucket
    (await eu.acquire('read', 'client'))();
    (await us.acquire('read', 'client'))(); // per-token limits are each account's own
    let usToken = false;
    void us.acquire('token', 'https://pay.example').then(() => (usToken = true));
    await flushMicrotasks();
    expect(usToken).toBe(false); // eu spent the host's one token call of this minute
    clock.advance(60_100);
    await flushMicrotasks();
    expect(usToken).toBe(true);
  });

  it('a shared line allows the lowest limit of the accounts on it; another clock gets its own line', async () => {
    const clock = new ClientFakeClock();
    const perIp = new PaymentIpRateLimits();
    const generous = new PaymentRateLimiter({ ...limits, tokenPerMinute: 3 }, clock, perIp);
    const strict = new PaymentRateLimiter({ ...limits, tokenPerMinute: 1 }, clock, perIp);
    (await generous.acquire('token', 'https://pay.example'))();
    let second = false;
    void strict.acquire('token', 'https://pay.example').then(() => (second = true));
    await flushMicrotasks();
    expect(second).toBe(false); // one a minute for everyone on the line now
    const otherClock = new ClientFakeClock();
    const onOtherClock = new PaymentRateLimiter({ ...limits, tokenPerMinute: 1 }, otherClock, perIp);
    (await onOtherClock.acquire('token', 'https://pay.example'))(); // not held by the first clock's line
    clock.advance(60_100);
    await flushMicrotasks();
    expect(second).toBe(true);
  });
});

describe('the client clock', () => {
  it('does not follow the wall clock: a step back of ten minutes neither holds a rate-limit window nor a token that long', async () => {
    const { jest } = await import('@jest/globals');
    const { systemPaymentClock } = await import('../../lib/client/payment-client.clock.js');
    const realNow = Date.now.bind(Date);
    let step = 0;
    const stepped = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + step);
    try {
      const before = systemPaymentClock.now();
      step = -10 * 60_000;
      const after = systemPaymentClock.now();
      expect(after).toBeGreaterThanOrEqual(before);
      expect(after - before).toBeLessThan(1_000);
    } finally {
      stepped.mockRestore();
    }
  });
});
