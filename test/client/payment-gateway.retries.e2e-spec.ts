import 'reflect-metadata';
import {
  PaymentAuthenticationError,
  PaymentNetworkError,
  PaymentPayoutError,
  PaymentProviderError,
  PaymentRateLimitError,
  PaymentServerError,
} from '../../lib/client/payment-api.errors.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { rejectionOf, SANDBOX_CLIENT, SimulatorClock, startClientHarness, type ClientHarness } from '../support/client-simulator.js';
import { unusedLoopbackPort } from '../support/loopback-port.js';

const CREATE = '/payment/create';
const REFUND = /^\/payment\/[^/]+\/refund$/;
const recipient = { account_number: '0123456789' };

describe('PaymentGatewayService retries (against the simulator)', () => {
  let h: ClientHarness;
  afterEach(async () => h?.close());

  describe('createPayment: same idempotency key on every retry, one payment', () => {
    it.each([
      ['PAY_5002 after the service acted', { kind: 'status' as const, code: 'PAY_5002', afterHandling: true }],
      ['PAY_5001', { kind: 'status' as const, code: 'PAY_5001' }],
      ['a reset after the service acted', { kind: 'reset' as const, afterHandling: true }],
      ['a time-out after the service acted', { kind: 'stall' as const, afterHandling: true }],
      ['a bare 502 from a proxy', { kind: 'status' as const, status: 502, code: 'HTTP_502' }],
      ['429', { kind: 'status' as const, status: 429, code: 'RATE_LIMITED' }],
    ])('%s', async (_label, fault) => {
      h = await startClientHarness({ httpTimeoutMs: 800 });
      h.sim.injectFault({ path: CREATE, ...fault });
      const payment = await h.client.createPayment({ amount: '7', currency: 'USD' });
      const creates = h.calls(CREATE);
      expect(creates).toHaveLength(2);
      expect(new Set(creates.map((r) => (r.body as { idempotency_key: string }).idempotency_key))).toEqual(new Set([payment.idempotencyKey]));
      expect(h.sim.payments).toHaveLength(1);
      expect(h.sim.payments[0].trxId).toBe(payment.trxId);
    });

    it('keeps a caller-given key and gives up after maxRetries with the key on the error', async () => {
      h = await startClientHarness({ maxRetries: 2 });
      h.sim.injectFault({ path: CREATE, kind: 'status', code: 'PAY_5002', times: 10 });
      const error = await rejectionOf(h.client.createPayment({ amount: '7', currency: 'USD' }, { idempotencyKey: 'order-42' }));
      expect(error).toBeInstanceOf(PaymentServerError);
      expect(error).toMatchObject({ code: 'PAY_5002', idempotencyKey: 'order-42' });
      expect(h.calls(CREATE).map((r) => (r.body as { idempotency_key: string }).idempotency_key)).toEqual(['order-42', 'order-42', 'order-42']);
      // exponential backoff with full jitter (random fixed at 0.5): 10·2⁰·0.5, 10·2¹·0.5
      expect(h.clock.sleeps).toEqual([5, 10]);
    });

    it('does not retry PAY_5003 (a real provider answer)', async () => {
      h = await startClientHarness();
      h.sim.scriptNextPayment('provider-failure');
      expect(await rejectionOf(h.client.createPayment({ amount: '7', currency: 'USD' }))).toBeInstanceOf(PaymentProviderError);
      expect(h.calls(CREATE)).toHaveLength(1);
    });
  });

  describe('GETs retry on network errors, 5xx and 429', () => {
    it.each([
      ['503', { kind: 'status' as const, status: 503, code: 'HTTP_503' }],
      ['a reset', { kind: 'reset' as const }],
      ['a time-out', { kind: 'stall' as const }],
    ])('%s', async (_label, fault) => {
      h = await startClientHarness({ httpTimeoutMs: 800 });
      await h.client.listGateways();
      h.sim.injectFault({ method: 'GET', path: '/payments/gateways', ...fault, times: 2 });
      await expect(h.client.listGateways()).resolves.toEqual(expect.any(Array));
      expect(h.calls('/payments/gateways')).toHaveLength(4);
    });

    it('a trickling answer to a read times out and is retried; the retry gets the answer', async () => {
      h = await startClientHarness({ httpTimeoutMs: 800 });
      await h.client.listGateways();
      h.sim.injectFault({ method: 'GET', path: '/payments/gateways', kind: 'trickle', trickleMs: 20_000 });
      const startedAt = Date.now();
      await expect(h.client.listGateways()).resolves.toEqual(expect.any(Array));
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(h.calls('/payments/gateways').map((r) => r.fault)).toEqual([undefined, 'trickle', undefined]);
    });

    it('a 503 with Retry-After waits it in full (past retryMaxDelayMs); past maxRetryAfterMs the 503 is thrown at once', async () => {
      h = await startClientHarness({ maxRetries: 2, retryMaxDelayMs: 1_000 });
      await h.client.listGateways();
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 503, retryAfterSeconds: 20 });
      await h.client.listGateways();
      expect(h.clock.sleeps).toEqual([20_000]); // not the 5 ms backoff
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 503, retryAfterSeconds: 121 });
      const error = await rejectionOf(h.client.listGateways());
      expect(error).toBeInstanceOf(PaymentServerError);
      expect(error).toMatchObject({ httpStatus: 503, retryAfterSeconds: 121 });
      expect(h.clock.sleeps).toEqual([20_000]);
    });

    it('waits Retry-After on 429 in full, even past retryMaxDelayMs, and surfaces the 429 when retries run out', async () => {
      h = await startClientHarness({ maxRetries: 1, retryMaxDelayMs: 5_000 });
      await h.client.listGateways();
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 3 });
      await h.client.listGateways();
      expect(h.clock.sleeps).toEqual([3_000]);
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 90, times: 2 });
      const error = await rejectionOf(h.client.listGateways());
      expect(error).toBeInstanceOf(PaymentRateLimitError);
      expect(error).toMatchObject({ httpStatus: 429, retryAfterSeconds: 90 });
      expect(h.clock.sleeps).toEqual([3_000, 90_000]);
    });
  });

  it('a Retry-After of 0 waits the backoff: no burst of retries at a limit counted per minute', async () => {
    h = await startClientHarness({ maxRetries: 2, retryBaseDelayMs: 400 });
    await h.client.listGateways();
    h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 0, times: 2 });
    await h.client.listGateways();
    expect(h.clock.sleeps).toEqual([200, 400]); // half of each backoff ceiling, 400 then 800 ms (the harness's random is 0.5)
  });

  describe('Retry-After is never cut short', () => {
    it('a token call limited for 60 s waits the whole 60 s and succeeds instead of burning its retries early', async () => {
      // another process on the same IP used the token window: the client's own queue knows nothing of it
      h = await startClientHarness(
        { maxRetries: 1, retryMaxDelayMs: 30_000, rateLimits: false },
        { rateLimits: { tokenPerMinute: 1 } },
      );
      await h.client.createPayment({ amount: '1', currency: 'USD' });
      const second = await h.client.createPayment({ amount: '2', currency: 'USD' });
      expect(second.trxId).toEqual(expect.any(String));
      const tokenCalls = h.calls('/authentication/token');
      expect(tokenCalls.map((r) => r.status)).toEqual([200, 429, 200]);
      expect(tokenCalls[2].at - tokenCalls[0].at).toBeGreaterThanOrEqual(60_000);
      expect(Math.max(...h.clock.sleeps)).toBeGreaterThanOrEqual(59_000);
      expect(h.sim.payments).toHaveLength(2);
    });

    it("a 429's Retry-After holds the later calls of its limit too (they would meet the same 429); other limits go on", async () => {
      h = await startClientHarness({ maxRetries: 0 });
      await h.client.listGateways();
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 30 });
      expect(await rejectionOf(h.client.listGateways())).toMatchObject({ httpStatus: 429, retryAfterSeconds: 30 });
      await h.client.createPayment({ amount: '1', currency: 'USD' }); // creations: another limit
      await h.client.listGateways();
      const reads = h.calls('/payments/gateways');
      expect(reads.map((r) => r.status)).toEqual([200, 429, 200]);
      // was sent at once, into the service's window (a 429 again, a retry spent)
      expect(reads[2].at - reads[1].at).toBeGreaterThanOrEqual(30_000);
      expect(h.calls(CREATE)[0].at - reads[1].at).toBeLessThan(30_000);
    });

    it("a health check's token call answered 429: the next call's token call waits its Retry-After instead of going out at once", async () => {
      h = await startClientHarness();
      h.sim.injectFault({ path: '/authentication/token', kind: 'status', status: 429, retryAfterSeconds: 60 });
      await expect(h.client.checkAuthentication()).rejects.toBeInstanceOf(PaymentRateLimitError);
      await h.client.listGateways();
      const tokenCalls = h.calls('/authentication/token');
      expect(tokenCalls.map((r) => r.status)).toEqual([429, 200]);
      expect(tokenCalls[1].at - tokenCalls[0].at).toBeGreaterThanOrEqual(60_000);
    });

    it('a Retry-After longer than maxRetryAfterMs (default 120 s) throws PaymentRateLimitError at once', async () => {
      h = await startClientHarness({ maxRetries: 3 });
      await h.client.listGateways();
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 121 });
      const error = await rejectionOf(h.client.listGateways());
      expect(error).toBeInstanceOf(PaymentRateLimitError);
      expect(error).toMatchObject({ httpStatus: 429, retryAfterSeconds: 121, code: 'RATE_LIMITED' });
      expect(error.message).toContain('maxRetryAfterMs');
      expect(h.clock.sleeps).toEqual([]);
      expect(h.calls('/payments/gateways')).toHaveLength(2); // the first call, then one 429: no early retry

      // exactly the limit is still waited for
      h.sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 120 });
      await h.client.listGateways();
      expect(h.clock.sleeps).toEqual([120_000]);
    });

    it('maxRetryAfterMs is an option; a too-long wait on the token call fails the call that needed the token', async () => {
      h = await startClientHarness({ maxRetryAfterMs: 10_000 });
      h.sim.injectFault({ path: '/authentication/token', kind: 'status', status: 429, retryAfterSeconds: 11 });
      const error = await rejectionOf(h.client.createPayout({ amount: '1', currency: 'USD', recipient }));
      expect(error).toBeInstanceOf(PaymentRateLimitError);
      // the payout's own error: not sent, with the token call's wait
      expect(error).toMatchObject({ retryAfterSeconds: 11, method: 'POST', path: '/payout', mayHaveReachedService: false });
      expect(error.message).toContain('was not sent: getting an access token failed (POST /authentication/token failed with HTTP 429');
      expect(h.calls('/payout')).toHaveLength(0);
      h.sim.injectFault({ path: '/authentication/token', kind: 'status', status: 429, retryAfterSeconds: 10 });
      await h.client.createPayout({ amount: '1', currency: 'USD', recipient });
      expect(h.clock.sleeps).toEqual([10_000]);
      expect(h.sim.payouts).toHaveLength(1);
    });
  });

  describe('refunds and payouts are never sent twice when the service may have acted', () => {
    async function succeededPayment(harness: ClientHarness): Promise<string> {
      harness.sim.scriptNextPayment('succeed');
      return (await harness.client.createPayment({ amount: '50', currency: 'USD' })).trxId!;
    }

    it.each([
      ['a 500 after the service acted', { kind: 'status' as const, status: 500, code: 'HTTP_500', afterHandling: true }, PaymentServerError],
      ['PAY_5001', { kind: 'status' as const, code: 'PAY_5001' }, PaymentServerError],
      ['a reset after the service acted', { kind: 'reset' as const, afterHandling: true }, PaymentNetworkError],
      ['a time-out after the service acted', { kind: 'stall' as const, afterHandling: true }, PaymentNetworkError],
    ])('refund: %s → error, one request', async (_label, fault, ErrorClass) => {
      h = await startClientHarness({ httpTimeoutMs: 800 });
      const trxId = await succeededPayment(h);
      h.sim.injectFault({ path: REFUND, ...fault, times: 5 });
      const error = await rejectionOf(h.client.refundPayment(trxId, { amount: '10' }));
      expect(error).toBeInstanceOf(ErrorClass);
      if (error instanceof PaymentNetworkError) expect(error.mayHaveReachedService).toBe(true);
      expect(h.calls(REFUND)).toHaveLength(1);
      expect(h.sim.refunds.length).toBeLessThanOrEqual(1);
    });

    it.each([
      ['a 500 after the service acted', { kind: 'status' as const, status: 500, code: 'HTTP_500', afterHandling: true }],
      ['a time-out after the service acted', { kind: 'stall' as const, afterHandling: true }],
    ])('payout: %s → error, one request, one payout', async (_label, fault) => {
      h = await startClientHarness({ httpTimeoutMs: 800 });
      h.sim.injectFault({ path: '/payout', method: 'POST', ...fault, times: 5 });
      await rejectionOf(h.client.createPayout({ amount: '10', currency: 'USD', recipient }));
      expect(h.calls('/payout', 'POST')).toHaveLength(1);
      expect(h.sim.payouts).toHaveLength(1);
    });

    it('httpTimeoutMs bounds the whole attempt: a refund whose 201 trickles in is cut, not waited on for ever, not sent again, and resolves (the service acted)', async () => {
      h = await startClientHarness({ httpTimeoutMs: 800 });
      const trxId = await succeededPayment(h);
      // headers at once, then a byte every 250 ms for 20 s: Node's idle timer alone never fires
      h.sim.injectFault({ path: REFUND, kind: 'trickle', trickleMs: 20_000 });
      const startedAt = Date.now();
      // the status line said 201: as with a body cut short, the refund is done, only its fields are unknown
      const refund = await h.client.refundPayment(trxId, { amount: '10' });
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(refund).toMatchObject({ httpStatus: 201, raw: undefined });
      expect(h.calls(REFUND)).toHaveLength(1);
      expect(h.sim.refunds).toHaveLength(1);
    });

    it("a refund answered 201 with a body over the client's size limit (10 MiB) resolves, sent once: the status line said the service acted", async () => {
      h = await startClientHarness();
      const trxId = await succeededPayment(h);
      h.sim.injectFault({ path: REFUND, kind: 'rewrite', rewrite: (body) => ({ body: { ...body, padding: 'x'.repeat(11 * 1024 * 1024) } }) });
      const refund = await h.client.refundPayment(trxId, { amount: '10' });
      expect(refund).toMatchObject({ httpStatus: 201, raw: undefined });
      expect(h.calls(REFUND)).toHaveLength(1);
      expect(h.sim.refunds).toHaveLength(1);
    });

    it.each([
      ['[]', []],
      ['{}', {}],
      ['null', null],
      ['left out', undefined],
    ])('a payout answered 200 with the error envelope (data %s) is an error whose outcome is unknown (mayHaveReachedService), never a success, and is not sent again', async (_label, data) => {
      h = await startClientHarness();
      h.sim.injectFault({
        path: '/payout',
        method: 'POST',
        kind: 'rewrite',
        rewrite: () => ({ body: { status: 'error', code: 'PAY_3001', message: 'Payout request failed.', errors: {}, data }, status: 200 }),
      });
      const error = await rejectionOf(h.client.createPayout({ amount: '10', currency: 'USD', recipient }));
      expect(error).toBeInstanceOf(PaymentPayoutError);
      expect(error).toMatchObject({ code: 'PAY_3001', httpStatus: 200, mayHaveReachedService: true });
      expect(error.message).toContain('the service may have acted; check before sending it again');
      expect(h.calls('/payout')).toHaveLength(1);
      expect(h.sim.payouts).toHaveLength(1); // it did act: resolving as a failure the caller repeats would pay twice
    });

    it('a refund answered with a redirect (303) is an error whose outcome is unknown, not "surely did nothing", and is not followed or sent again', async () => {
      h = await startClientHarness();
      const trxId = await succeededPayment(h);
      h.sim.injectFault({ path: REFUND, kind: 'rewrite', rewrite: () => ({ status: 303 }) });
      const error = await rejectionOf(h.client.refundPayment(trxId, { amount: '10' }));
      expect(error).toMatchObject({ httpStatus: 303, mayHaveReachedService: true });
      expect(h.calls(REFUND)).toHaveLength(1);
      expect(h.sim.refunds).toHaveLength(1);
    });

    it('a read whose 200 trickles in past httpTimeoutMs fails with an error that carries the status it was answered', async () => {
      h = await startClientHarness({ httpTimeoutMs: 800, maxRetries: 0 });
      h.sim.injectFault({ method: 'GET', path: '/payments/gateways', kind: 'trickle', trickleMs: 20_000 });
      const error = await rejectionOf(h.client.listGateways());
      expect(error).toBeInstanceOf(PaymentNetworkError);
      expect(error).toMatchObject({ code: 'NETWORK_ERROR', failure: 'timeout', httpStatus: 200, mayHaveReachedService: true });
      expect(error.message).toContain('was answered 200, but its body could not be read (ETIMEDOUT)');
    });

    it('refund and payout are retried after 429 (the service did not act), waiting Retry-After', async () => {
      h = await startClientHarness();
      const trxId = await succeededPayment(h);
      h.sim.injectFault({ path: REFUND, kind: 'status', status: 429, retryAfterSeconds: 2 });
      h.sim.injectFault({ path: '/payout', method: 'POST', kind: 'status', status: 429, retryAfterSeconds: 4 });
      await h.client.refundPayment(trxId);
      await h.client.createPayout({ amount: '10', currency: 'USD', recipient });
      expect(h.clock.sleeps).toEqual([2_000, 4_000]);
      expect(h.sim.refunds).toHaveLength(1);
      expect(h.sim.payouts).toHaveLength(1);
    });

    it('a refund whose token call fails reports that the refund itself was not sent', async () => {
      h = await startClientHarness({ maxRetries: 1 });
      const trxId = await succeededPayment(h);
      h.sim.advanceTime(10 * 60_000); // the cached token is too old: the refund needs a new one
      h.sim.injectFault({ path: '/authentication/token', kind: 'reset', times: 2 });
      const error = await rejectionOf(h.client.refundPayment(trxId));
      expect(error).toBeInstanceOf(PaymentNetworkError);
      expect(error).toMatchObject({ mayHaveReachedService: false, method: 'POST' });
      expect(error.path).toMatch(REFUND);
      expect(h.calls(REFUND)).toHaveLength(0);
      await h.client.refundPayment(trxId);
      expect(h.sim.refunds).toHaveLength(1);
    });

    it.each([
      ['answers 500 PAY_5001 on every attempt', [{ kind: 'status' as const, code: 'PAY_5001', times: 2 }], PaymentServerError, { code: 'PAY_5001', httpStatus: 500 }],
      ['times out, then answers 401 PAY_1004', [{ kind: 'stall' as const }, { kind: 'status' as const, code: 'PAY_1004' }], PaymentAuthenticationError, { code: 'PAY_1004', httpStatus: 401 }],
    ])('a refund and a payout whose token call %s were not sent, and their errors say so', async (_label, faults, ErrorClass, expected) => {
      h = await startClientHarness({ maxRetries: 1, httpTimeoutMs: 300 });
      const calls = [
        { path: '/payment/trx_1/refund', send: () => h.client.refundPayment('trx_1', { amount: '1' }) },
        { path: '/payout', send: () => h.client.createPayout({ amount: '1', currency: 'USD', recipient }) },
      ];
      for (const { path, send } of calls) {
        for (const fault of faults) h.sim.injectFault({ path: '/authentication/token', ...fault });
        const error = await rejectionOf(send());
        expect(h.calls(path)).toHaveLength(0);
        // the token call's class, code and status, so callers branch as before; the call's own path
        expect(error).toBeInstanceOf(ErrorClass);
        expect(error).toMatchObject({ ...expected, method: 'POST', path, mayHaveReachedService: false });
        expect(error.message).toMatch(new RegExp(`^POST ${path} was not sent: getting an access token failed \\(POST /authentication/token failed`));
        expect(error.cause).toMatchObject({ ...expected, path: '/authentication/token', mayHaveReachedService: true });
      }
      expect(h.sim.refunds).toHaveLength(0);
      expect(h.sim.payouts).toHaveLength(0);
    });

    it('a non-idempotent POST is retried when the connection is refused (nothing was sent)', async () => {
      h = await startClientHarness();
      const port = await unusedLoopbackPort();
      const options = resolvePaymentOptions({ baseUrl: `http://127.0.0.1:${port}`, ...SANDBOX_CLIENT, maxRetries: 2, retryBaseDelayMs: 10 });
      const clock = new SimulatorClock(h.sim);
      const offline = new PaymentGatewayService(options, { clock, random: () => 0.5 });
      try {
        const error = await rejectionOf(offline.request({ method: 'POST', path: '/payout', body: {}, authenticated: false }));
        expect(error).toBeInstanceOf(PaymentNetworkError);
        expect(error).toMatchObject({ mayHaveReachedService: false, failure: 'connection-refused' });
        expect(clock.sleeps).toHaveLength(2); // both retries were taken
      } finally {
        offline.onApplicationShutdown();
      }
    });
  });
});
