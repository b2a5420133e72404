import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PAYMENT_ACCOUNT_OPTIONS } from '../../lib/payment.constants.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { PAYMENT_CLIENT_RUNTIME } from '../../lib/payment.constants.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { SANDBOX_CLIENT, SimulatorClock } from '../support/client-simulator.js';
import { waitFor } from '../support/wait.js';

describe('PaymentGatewayService in a Nest module', () => {
  beforeAll(() => Logger.overrideLogger(false));
  let sim: PaymentServiceSimulator;
  /** A testing module with the client alone, on the simulator, on the system clock. */
  const clientModule = () =>
    Test.createTestingModule({
      providers: [{ provide: PAYMENT_ACCOUNT_OPTIONS, useValue: resolvePaymentOptions({ baseUrl: sim.url, ...SANDBOX_CLIENT }) }, PaymentGatewayService],
    }).compile();
  beforeEach(async () => {
    sim = new PaymentServiceSimulator();
    await sim.start();
  });
  afterEach(async () => sim.stop());

  it('is injected with the resolved options and an optional runtime, and closes its agent on shutdown', async () => {
    const clock = new SimulatorClock(sim);
    const moduleRef = await Test.createTestingModule({
      providers: [
        { provide: PAYMENT_ACCOUNT_OPTIONS, useValue: resolvePaymentOptions({ baseUrl: sim.url, ...SANDBOX_CLIENT }) },
        { provide: PAYMENT_CLIENT_RUNTIME, useValue: { clock } },
        PaymentGatewayService,
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const client = app.get(PaymentGatewayService);
    const payment = await client.createPayment({ amount: '3', currency: 'USD' });
    expect((await client.getPaymentStatus(payment.trxId!)).status).toBe('PENDING');
    await client.listGateways();
    const pooled = sim.connectionCount;
    await client.listGateways();
    expect(sim.connectionCount).toBe(pooled); // the keep-alive socket was reused
    await app.close(); // onApplicationShutdown destroys the pooled sockets and ends the client
    // nothing is sent after shutdown: a call made now is refused before it leaves
    const requests = sim.requests.length;
    await expect(client.listGateways()).rejects.toMatchObject({ code: 'ABORTED', mayHaveReachedService: false, message: expect.stringContaining('given up at shutdown') });
    expect(sim.requests).toHaveLength(requests);
    expect(sim.connectionCount).toBe(pooled);
  });

  it('lets a refund already on the wire run to its answer at app.close(): the sockets close after it, not under it', async () => {
    const moduleRef = await clientModule();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const client = app.get(PaymentGatewayService);
    sim.scriptNextPayment('succeed');
    const payment = await client.createPayment({ amount: '10', currency: 'USD' });
    // the service acts at once, its answer takes 600 ms to arrive
    sim.injectFault({ method: 'POST', path: /\/refund$/, kind: 'trickle', trickleMs: 600 });
    const refund = client.refundPayment(payment.trxId!, { amount: '1' });
    await waitFor('the refund reached the service', () => sim.requests.some((r) => r.route.endsWith('/refund')));
    await app.close();
    // before, shutdown destroyed the socket: ECONNRESET, "the service may have received it"
    await expect(refund).resolves.toMatchObject({ refundUid: expect.any(String), httpStatus: 201 });
    expect(sim.requests.filter((r) => r.route.endsWith('/refund'))).toHaveLength(1);
  });

  it('gives up a call waiting to retry when the app closes: no request goes out after app.close()', async () => {
    const moduleRef = await clientModule();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const client = app.get(PaymentGatewayService);
    await client.listGateways();
    sim.injectFault({ method: 'GET', path: '/payments/gateways', kind: 'status', status: 503, retryAfterSeconds: 3, times: 10 });
    const call = client.listGateways().catch((error: unknown) => error);
    await waitFor('the first attempt was answered 503', () => sim.requests.filter((r) => r.status === 503).length === 1);
    const startedAt = Date.now();
    await app.close();
    // before, the call slept out its Retry-After and sent three more requests, minutes after shutdown with longer waits
    expect(await call).toMatchObject({ code: 'ABORTED', message: expect.stringContaining('given up at shutdown') });
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(sim.requests.filter((r) => r.status === 503)).toHaveLength(1);
  });

  it('works without a runtime provider (system clock)', async () => {
    const moduleRef = await clientModule();
    const client = moduleRef.get(PaymentGatewayService);
    expect(await client.listGateways()).toEqual(expect.any(Array));
    await moduleRef.close();
  });

  it('is provided by PaymentModule.forRoot() and talks to the service', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentModule.forRoot({ baseUrl: sim.url, clientId: SANDBOX_CLIENT.clientId, clientSecret: SANDBOX_CLIENT.clientSecret })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      const client = app.get(PaymentGatewayService);
      sim.scriptNextPayment('succeed');
      const payment = await client.createPayment({ amount: '12', currency: 'USD', custom: 'order-7' });
      expect(await client.getPaymentStatus(payment.trxId!)).toMatchObject({ status: 'SUCCESS', custom: 'order-7' });
      const refund = await client.refundPayment(payment.trxId!, { amount: '12' });
      expect(await client.getRefund(refund.refundUid!)).toMatchObject({ refundUid: refund.refundUid });
    } finally {
      await app.close();
    }
  });
});
