import 'reflect-metadata';
import { getEventListeners } from 'node:events';
import { Logger } from '@nestjs/common';
import {
  PaymentAbortedError,
  PaymentAuthenticationError,
  PaymentNetworkError,
  PaymentRateLimitError,
  PaymentValidationError,
} from '../../lib/client/payment-api.errors.js';
import { systemPaymentClock } from '../../lib/client/payment-client.clock.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { ClientFakeClock, flushMicrotasks } from '../support/client-fake-clock.js';
import { rejectionOf, SANDBOX_CLIENT, SimulatorClock } from '../support/client-simulator.js';
import { ClientStubServer, success } from '../support/client-stub-server.js';
import { waitFor } from '../support/wait.js';

const REFUND = /^\/payment\/[^/]+\/refund$/;

/**
 * A signal gives a call up while it waits (rate-limit slot, token, backoff, Retry-After),
 * never once its request is on the wire. The client runs on the simulator's clock; a
 * wait lasts 400 ms of real time before the clock jumps, so a test can abort inside it.
 */
describe('PaymentGatewayService calls with an AbortSignal', () => {
  let sim: PaymentServiceSimulator;
  let client: PaymentGatewayService;
  let clock: SimulatorClock;

  async function start(options: PaymentModuleOptions = {}): Promise<void> {
    sim = new PaymentServiceSimulator();
    await sim.start();
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const resolved = resolvePaymentOptions({ baseUrl: sim.url, clientId, clientSecret, retryBaseDelayMs: 10, ...options });
    clock = new SimulatorClock(sim, 400);
    client = new PaymentGatewayService(resolved, { clock, random: () => 0.5 });
  }

  afterEach(async () => {
    client?.onApplicationShutdown();
    await sim?.stop();
  });

  async function succeededPayment(): Promise<string> {
    sim.scriptNextPayment('succeed');
    const payment = await client.createPayment({ amount: '10', currency: 'USD' });
    return payment.trxId!;
  }

  it('a refund waiting for a rate-limit slot is given up, sends nothing, and frees its place in the queue', async () => {
    await start({ rateLimits: { moneyMovementPerMinute: 1 } });
    const trxId = await succeededPayment();
    await client.refundPayment(trxId, { amount: '1' });
    const controller = new AbortController();
    const waiting = rejectionOf(client.refundPayment(trxId, { amount: '2' }, { signal: controller.signal }));
    controller.abort();
    const error = await waiting;
    expect(error).toBeInstanceOf(PaymentAbortedError);
    expect(error).toMatchObject({ code: 'ABORTED', mayHaveReachedService: false, method: 'POST' });
    expect(error.message).toContain('before it was sent');
    // the next refund gets the next slot (a minute of simulated time later); the aborted one never goes
    await client.refundPayment(trxId, { amount: '3' });
    expect(sim.requests.filter((r) => REFUND.test(r.route)).map((r) => (r.body as { amount?: string }).amount)).toEqual([
      '1.00000000',
      '3.00000000',
    ]);
  });

  it('a refund answered 429 is given up during its Retry-After wait: one request, the service did not act', async () => {
    await start();
    const trxId = await succeededPayment();
    sim.injectFault({ path: REFUND, kind: 'status', status: 429, retryAfterSeconds: 30 });
    const controller = new AbortController();
    const call = rejectionOf(client.refundPayment(trxId, { amount: '1' }, { signal: controller.signal }));
    await waitFor('the 429 arrived', () => sim.requests.some((r) => REFUND.test(r.route)));
    controller.abort();
    const error = await call;
    expect(error).toBeInstanceOf(PaymentAbortedError);
    expect(error.mayHaveReachedService).toBe(false);
    expect((error.cause as { code?: string }).code).toBe('RATE_LIMITED');
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(sim.requests.filter((r) => REFUND.test(r.route))).toHaveLength(1);
    expect(sim.refunds).toHaveLength(0);
  });

  it('a payment creation that timed out and is given up in its backoff says an attempt may have reached the service', async () => {
    await start({ httpTimeoutMs: 300 });
    sim.injectFault({ path: '/payment/create', kind: 'stall' });
    const controller = new AbortController();
    const call = rejectionOf(client.createPayment({ amount: '5', currency: 'USD' }, { idempotencyKey: 'order-7', signal: controller.signal }));
    await waitFor('the first attempt timed out and the backoff began', () => clock.sleeps.length === 1);
    controller.abort();
    const error = await call;
    expect(error).toBeInstanceOf(PaymentAbortedError);
    expect(error).toMatchObject({ mayHaveReachedService: true, idempotencyKey: 'order-7' });
    expect(error.message).toContain('may have reached the service');
    expect(sim.requests.filter((r) => r.route === '/payment/create')).toHaveLength(1);
  });

  it('an earlier attempt that may have acted is remembered: a later 429 or token failure does not make it "not sent"', async () => {
    await start({ httpTimeoutMs: 300 });
    // attempt 1 creates the payment but its answer never comes; attempt 2 is told to wait 30 s
    sim.injectFault({ path: '/payment/create', kind: 'stall', afterHandling: true });
    sim.injectFault({ path: '/payment/create', kind: 'status', status: 429, retryAfterSeconds: 30 });
    const controller = new AbortController();
    const call = rejectionOf(client.createPayment({ amount: '5', currency: 'USD' }, { idempotencyKey: 'order-8', signal: controller.signal }));
    await waitFor('the 429 came and its wait began', () => clock.sleeps.length === 2);
    controller.abort();
    const aborted = await call;
    expect(sim.payments).toHaveLength(1);
    expect(aborted).toBeInstanceOf(PaymentAbortedError);
    expect(aborted).toMatchObject({ mayHaveReachedService: true, idempotencyKey: 'order-8' });
    expect(aborted.message).toContain('may have reached the service');

    // attempt 1 creates the payment, attempt 2 has its token refused, the new token cannot be had
    await client.listGateways();
    sim.injectFault({ path: '/payment/create', kind: 'stall', afterHandling: true });
    sim.injectFault({ path: '/payment/create', kind: 'status', code: 'PAY_1003' });
    const second = rejectionOf(client.createPayment({ amount: '6', currency: 'USD' }, { idempotencyKey: 'order-9' }));
    await waitFor('its first attempt is on the wire', () => sim.requests.filter((r) => r.route === '/payment/create').length === 3);
    sim.injectFault({ path: '/authentication/token', kind: 'reset', times: 10 });
    const error = await second;
    expect(sim.payments).toHaveLength(2);
    expect(error).toBeInstanceOf(PaymentNetworkError);
    expect(error).toMatchObject({ mayHaveReachedService: true, idempotencyKey: 'order-9' });
    expect(error.message).toContain('not sent again');
  });

  it('the final error keeps what an earlier attempt may have done: a time-out, then a refused connection', async () => {
    await start({ httpTimeoutMs: 300, maxRetries: 1 });
    sim.injectFault({ path: '/payment/create', kind: 'stall', afterHandling: true }); // created, answer lost
    const call = rejectionOf(client.createPayment({ amount: '5', currency: 'USD' }, { idempotencyKey: 'order-10' }));
    await waitFor('the backoff after the time-out began', () => clock.sleeps.length === 1);
    expect(sim.payments).toHaveLength(1);
    await sim.stop(); // the retry is refused: it surely did not reach the service, the first one may have
    const error = await call;
    expect(error).toBeInstanceOf(PaymentNetworkError);
    expect(error).toMatchObject({ mayHaveReachedService: true, idempotencyKey: 'order-10' });
    expect(error.message).toContain('an earlier attempt may have reached the service');
  });

  it('an earlier time-out is kept on every final error: a Retry-After past maxRetryAfterMs, retries spent on 429s, a refused token', async () => {
    await start({ httpTimeoutMs: 300, maxRetries: 2 });
    const created = () => sim.payments.length;
    // time-out (payment created, answer lost), then a 429 asking for an hour
    sim.injectFault({ path: '/payment/create', kind: 'stall', afterHandling: true });
    sim.injectFault({ path: '/payment/create', kind: 'status', status: 429, retryAfterSeconds: 3600 });
    const tooLong = await rejectionOf(client.createPayment({ amount: '5', currency: 'USD' }, { idempotencyKey: 'order-11' }));
    expect(created()).toBe(1);
    expect(tooLong).toBeInstanceOf(PaymentRateLimitError);
    expect(tooLong).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 3600, mayHaveReachedService: true, idempotencyKey: 'order-11' });
    expect(tooLong.message).toContain('an earlier attempt may have reached the service');
    expect(JSON.parse(JSON.stringify(tooLong))).toMatchObject({ mayHaveReachedService: true });

    // time-out, then 429s until the retries are spent
    sim.injectFault({ path: '/payment/create', kind: 'stall', afterHandling: true });
    sim.injectFault({ path: '/payment/create', kind: 'status', status: 429, retryAfterSeconds: 1, times: 2 });
    const spent = await rejectionOf(client.createPayment({ amount: '6', currency: 'USD' }, { idempotencyKey: 'order-12' }));
    expect(created()).toBe(2);
    expect(spent).toBeInstanceOf(PaymentRateLimitError);
    expect(spent).toMatchObject({ mayHaveReachedService: true, idempotencyKey: 'order-12' });

    // time-out, then the token is refused, and so is the new one the client asks for
    sim.injectFault({ path: '/payment/create', kind: 'stall', afterHandling: true });
    sim.injectFault({ path: '/payment/create', kind: 'status', code: 'PAY_1003' });
    const call = rejectionOf(client.createPayment({ amount: '7', currency: 'USD' }, { idempotencyKey: 'order-13' }));
    await waitFor('its first attempt is on the wire', () => created() === 3);
    sim.injectFault({ path: '/authentication/token', kind: 'status', code: 'PAY_1004', times: 10 });
    const refused = await call;
    expect(refused).toBeInstanceOf(PaymentAuthenticationError);
    expect(refused).toMatchObject({ code: 'PAY_1004', mayHaveReachedService: true, idempotencyKey: 'order-13' });

    // a call that surely changed nothing says so
    sim.clearFaults();
    sim.injectFault({ path: '/payment/create', kind: 'status', status: 429, retryAfterSeconds: 3600 });
    const untouched = await rejectionOf(client.createPayment({ amount: '8', currency: 'USD' }, { idempotencyKey: 'order-14' }));
    expect(untouched).toMatchObject({ code: 'RATE_LIMITED', mayHaveReachedService: false });
    expect(created()).toBe(3);

    // a 5xx after the service acted: a payout answered 504 once it was made may have happened
    sim.injectFault({ path: '/payout', kind: 'status', status: 504, afterHandling: true });
    const payout = await rejectionOf(client.createPayout({ amount: '1', currency: 'USD', recipient: { account_number: '0123456789' } }));
    expect(payout).toMatchObject({ httpStatus: 504, mayHaveReachedService: true });
    expect(sim.payouts).toHaveLength(1);
  });

  it('a signal firing while the request is on the wire leaves its own failure: a payout that may have arrived says so', async () => {
    await start({ httpTimeoutMs: 800, maxRetries: 0 });
    sim.injectFault({ path: '/payout', kind: 'stall' });
    for (const authenticated of [false, true]) {
      const call = rejectionOf(
        client.request({ method: 'POST', path: '/payout', body: { amount: '1.00000000' }, authenticated, signal: AbortSignal.timeout(200) }),
      );
      const error = await call;
      expect(error).toBeInstanceOf(PaymentNetworkError);
      expect(error).toMatchObject({ code: 'TIMEOUT', mayHaveReachedService: true });
      sim.injectFault({ path: '/payout', kind: 'stall' });
    }
  });

  it('on the system clock, an abort during a 60 s Retry-After wait leaves no timer behind', async () => {
    await start();
    const { clientId, clientSecret } = SANDBOX_CLIENT;
    const system = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: sim.url, clientId, clientSecret }));
    try {
      await system.listGateways(); // token and sockets in place: only the wait's timer is new below
      const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
      const before = timers();
      sim.injectFault({ path: '/payments/gateways', kind: 'status', status: 429, retryAfterSeconds: 60 });
      const controller = new AbortController();
      const call = rejectionOf(system.listGateways({ signal: controller.signal }));
      await waitFor('the 60 s wait began', () => timers() > before);
      controller.abort();
      expect(await call).toBeInstanceOf(PaymentAbortedError);
      await waitFor('the wait timer is gone', () => timers() <= before, 2_000);
    } finally {
      system.onApplicationShutdown();
    }
  });

  it('a signal that fired while the request was on the wire, answered 429 Retry-After 60, ends the call without asking the clock to wait', async () => {
    Logger.overrideLogger(false);
    const stub = await new ClientStubServer().start();
    const fake = new ClientFakeClock(); // moves only when told: a wait asked for stays pending
    const stubbed = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT }), { clock: fake, random: () => 0.5 });
    try {
      let answer!: () => void;
      stub.answer('GET', '/payments/gateways', {
        status: 429,
        headers: { 'retry-after': '60' },
        hold: new Promise<void>((resolve) => (answer = resolve)),
        body: { status: 'error', code: 'RATE_LIMITED', message: 'slow down', errors: {}, data: [] },
      });
      const controller = new AbortController();
      const call = rejectionOf(stubbed.listGateways({ signal: controller.signal }));
      await waitFor('the request is on the wire', () => stub.calls('/payments/gateways').length === 1);
      controller.abort();
      answer();
      const error = await call;
      expect(error).toBeInstanceOf(PaymentAbortedError);
      expect(error).toMatchObject({ code: 'ABORTED', mayHaveReachedService: false });
      expect(error.message).toContain('before its next attempt');
      // a clock that ignored the signal would have kept a 60 s timer
      expect(fake.sleeps).toEqual([]);
      expect(fake.pendingSleepers).toBe(0);
    } finally {
      stubbed.onApplicationShutdown();
      await stub.stop();
    }
  });

  it('a call queued for a rate-limit slot at app.close() is given up, and the wait for the window ends with it', async () => {
    Logger.overrideLogger(false);
    const stub = await new ClientStubServer().start();
    const fake = new ClientFakeClock(); // moves only when told: the window's wait stays pending unless ended
    const options = resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT, rateLimits: { readsPerMinute: 1 } });
    const stubbed = new PaymentGatewayService(options, { clock: fake, random: () => 0.5 });
    try {
      stub.answer('GET', '/payments/gateways', success([]));
      await stubbed.listGateways();
      const queued = rejectionOf(stubbed.listGateways());
      await waitFor('the call waits for the window', () => fake.pendingSleepers === 1);
      await stubbed.onApplicationShutdown();
      expect(await queued).toMatchObject({ code: 'ABORTED', mayHaveReachedService: false });
      // before, the system clock's timer of this wait kept the process alive for the rest of the minute
      await waitFor('no wait is left', () => fake.pendingSleepers === 0);
      expect(stub.calls('/payments/gateways')).toHaveLength(1);
    } finally {
      await stub.stop();
    }
  });

  it('the system clock asked to sleep on a signal that already fired returns at once and starts no timer', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    const sleeping = systemPaymentClock.sleep(60_000, AbortSignal.abort());
    expect(timers()).toBe(before); // counted before any other code runs: nothing else starts one meanwhile
    await sleeping;
  });

  it("a payment creation given up while its own token request waits for a slot takes that request with it: the client secret is not sent later", async () => {
    await start({ rateLimits: { tokenPerMinute: 1 } });
    await client.createPayment({ amount: '1', currency: 'USD' });
    const controller = new AbortController();
    const second = rejectionOf(client.createPayment({ amount: '2', currency: 'USD' }, { signal: controller.signal }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    expect(await second).toMatchObject({ code: 'ABORTED', mayHaveReachedService: false });
    // past the minute (the clock jumps after 400 ms of real time): before, the token request went out then
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(sim.requests.filter((r) => r.route === '/authentication/token')).toHaveLength(1);
    expect(sim.requests.filter((r) => r.route === '/payment/create')).toHaveLength(1);
  });

  it('calls with a signal leave nothing on the client\'s long-lived shutdown signal (AbortSignal.any kept one entry per call on Node 20)', async () => {
    await start();
    const shutdown = (client as unknown as { executor: { closing: AbortController } }).executor.closing.signal;
    // what hangs on a signal: its listeners, and (Node 20) the signals AbortSignal.any() made from it
    // (Node's own Set, of another realm than the test's: read `size`, not `instanceof Set`)
    const sizeOf = (value: unknown): number => (typeof (value as { size?: unknown })?.size === 'number' ? (value as { size: number }).size : 0);
    const held = () =>
      getEventListeners(shutdown, 'abort').length +
      Object.getOwnPropertySymbols(shutdown).reduce((n, key) => n + sizeOf((shutdown as unknown as Record<symbol, unknown>)[key]), 0);
    const before = held();
    for (let i = 0; i < 50; i++) await client.listGateways({ signal: new AbortController().signal });
    expect(held()).toBe(before);
  });

  it('an aborted signal sends nothing, not even a token request; a signal that is not one is a validation error', async () => {
    await start();
    const error = await rejectionOf(client.createPayout({ amount: '1', currency: 'USD', recipient: { name: 'A' } }, { signal: AbortSignal.abort() }));
    expect(error).toBeInstanceOf(PaymentAbortedError);
    expect(await rejectionOf(client.listGateways({ signal: AbortSignal.abort() }))).toBeInstanceOf(PaymentAbortedError);
    const bad = await rejectionOf(client.getPaymentStatus('trx_1', { signal: { aborted: false } as never }));
    expect(bad).toBeInstanceOf(PaymentValidationError);
    expect(Object.keys(bad.errors)).toEqual(['signal']);
    expect(sim.requests).toHaveLength(0);
    // a signal that never fires changes nothing
    expect(await client.listGateways({ signal: new AbortController().signal })).toEqual(expect.any(Array));
  });

  it('a refund whose token was refused, given up while its new token waits for a slot, says its first attempt was refused', async () => {
    await start({ rateLimits: { tokenPerMinute: 1 } });
    const trxId = await succeededPayment();
    sim.injectFault({ path: REFUND, kind: 'status', code: 'PAY_1003' });
    const controller = new AbortController();
    const call = rejectionOf(client.refundPayment(trxId, { amount: '1' }, { signal: controller.signal }));
    await waitFor('the refund was refused', () => sim.requests.some((r) => REFUND.test(r.route)));
    controller.abort();
    const error = await call;
    expect(error).toBeInstanceOf(PaymentAbortedError);
    expect(error).toMatchObject({ code: 'ABORTED', mayHaveReachedService: false });
    expect(error.message).toContain('before its next attempt; the service did not act on it');
    expect(error.cause).toBeInstanceOf(PaymentAuthenticationError);
    expect(sim.requests.filter((r) => REFUND.test(r.route))).toHaveLength(1);
  });

  describe('token checks (checkAuthentication) sharing one request', () => {
    let stub: ClientStubServer;
    let fake: ClientFakeClock;
    let checked: PaymentGatewayService;

    /** A client whose one token slot a minute is taken and whose token is no longer reusable. */
    async function startWithSlotTaken(): Promise<void> {
      stub = await new ClientStubServer().start();
      stub.answer('POST', '/authentication/token', { body: { status: 'success', data: { access_token: 'tok_check_0001', expires_in: 2 } } });
      stub.answer('GET', '/payments/gateways', success([{ id: 'card' }]));
      fake = new ClientFakeClock(Date.UTC(2026, 0, 1));
      const options = resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT, rateLimits: { tokenPerMinute: 1 } });
      checked = new PaymentGatewayService(options, { clock: fake, random: () => 0.5 });
      await checked.listGateways();
      fake.advance(1_500);
    }

    afterEach(async () => {
      checked?.onApplicationShutdown();
      await stub?.stop();
    });

    it("one caller's abort ends only its own wait: a check without a signal sharing the request still gets the token", async () => {
      await startWithSlotTaken();
      const controller = new AbortController();
      const givenUp = rejectionOf(checked.checkAuthentication({ signal: controller.signal }));
      await flushMicrotasks();
      const patient = checked.checkAuthentication();
      await flushMicrotasks();
      controller.abort();
      const error = await givenUp;
      expect(error).toBeInstanceOf(PaymentAbortedError);
      expect(error).toMatchObject({ code: 'ABORTED', mayHaveReachedService: false });
      expect(error.message).toContain('given up by its signal');
      fake.advance(60_000); // the token slot comes round
      await expect(patient).resolves.toBeUndefined();
      expect(stub.calls('/authentication/token')).toHaveLength(2);
    });

    it('a request every caller gave up is not sent, and the next check asks again instead of repeating an abort', async () => {
      await startWithSlotTaken();
      const a = new AbortController();
      const b = new AbortController();
      const first = rejectionOf(checked.checkAuthentication({ signal: a.signal }));
      const second = rejectionOf(checked.checkAuthentication({ signal: b.signal }));
      await flushMicrotasks();
      a.abort();
      b.abort();
      expect(await first).toBeInstanceOf(PaymentAbortedError);
      expect(await second).toBeInstanceOf(PaymentAbortedError);
      // within the 30 s a failed check is held: asked again, not answered with the abort
      const next = checked.checkAuthentication();
      await flushMicrotasks();
      fake.advance(60_000);
      await expect(next).resolves.toBeUndefined();
      // listGateways' token and the next check's: the given-up request never left
      expect(stub.calls('/authentication/token')).toHaveLength(2);
    });

    it('a request already sent when its last caller gave up is shared by the next checks, and its refusal is held', async () => {
      stub = await new ClientStubServer().start();
      let answer!: () => void;
      const held = new Promise<void>((resolve) => (answer = resolve));
      stub.answer('POST', '/authentication/token', { status: 503, body: { status: 'error', code: 'PAY_5003', message: 'down' }, hold: held });
      fake = new ClientFakeClock(Date.UTC(2026, 0, 1));
      checked = new PaymentGatewayService(resolvePaymentOptions({ baseUrl: stub.url, ...SANDBOX_CLIENT }), { clock: fake, random: () => 0.5 });
      const probe = new AbortController();
      const givenUp = rejectionOf(checked.checkAuthentication({ signal: probe.signal }));
      await waitFor('the token request is on the wire', () => stub.calls('/authentication/token').length === 1);
      probe.abort();
      expect(await givenUp).toBeInstanceOf(PaymentAbortedError);
      // the next probes wait for the request on the wire rather than sending their own
      const next = rejectionOf(checked.checkAuthentication({ signal: new AbortController().signal }));
      const unbounded = rejectionOf(checked.checkAuthentication());
      await flushMicrotasks();
      answer();
      expect(await next).toMatchObject({ code: 'PAY_5003' });
      expect(await unbounded).toMatchObject({ code: 'PAY_5003' });
      // the service's refusal is held: no new request within 30 s
      expect(await rejectionOf(checked.checkAuthentication())).toMatchObject({ code: 'PAY_5003' });
      expect(stub.calls('/authentication/token')).toHaveLength(1);
    });
  });
});
