// The service counts token calls per IP (10 a minute), not per merchant: the accounts of one
// app share that limit, while the per-token and per-client limits stay each account's own.
// Against the simulator, which enforces every limit; the client's clock is the simulator's,
// so a minute of waiting passes at once.
import 'reflect-metadata';
import { Global, type INestApplication, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { getPaymentGatewayToken } from '../../lib/accounts/payment-account.tokens.js';
import type { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PAYMENT_CLIENT_RUNTIME } from '../../lib/payment.constants.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { SimulatorClock } from '../support/client-simulator.js';

const MERCHANTS = {
  eu: { merchantId: 1, clientId: 'eu-shop', clientSecret: 'eu-secret', webhookSecret: 'whsec_eu', mode: 'sandbox' as const },
  us: { merchantId: 2, clientId: 'us-shop', clientSecret: 'us-secret', webhookSecret: 'whsec_us', mode: 'sandbox' as const },
};
const TOKEN = '/authentication/token';

describe('several accounts in one app share the per-IP token limit', () => {
  let sim: PaymentServiceSimulator;
  let clock: SimulatorClock;
  let app: INestApplication;

  async function startApp(baseUrls: { eu: string; us: string }): Promise<void> {
    @Global()
    @Module({ providers: [{ provide: PAYMENT_CLIENT_RUNTIME, useValue: { clock, random: () => 0.5 } }], exports: [PAYMENT_CLIENT_RUNTIME] })
    class ClockModule {}
    const account = (name: 'eu' | 'us') =>
      PaymentModule.forRoot({
        account: name,
        baseUrl: baseUrls[name],
        environment: 'sandbox',
        clientId: MERCHANTS[name].clientId,
        clientSecret: MERCHANTS[name].clientSecret,
        webhookSecret: MERCHANTS[name].webhookSecret,
        retryBaseDelayMs: 10,
        readEnv: false,
      });
    @Module({ imports: [ClockModule, account('eu'), account('us')] })
    class AppModule {}
    app = await NestFactory.create(AppModule, new ExpressAdapter(), { logger: false });
    await app.init();
  }

  const client = (name: 'eu' | 'us') => app.get<PaymentGatewayService>(getPaymentGatewayToken(name));
  const tokenStatuses = () => sim.requests.filter((r) => r.route === TOKEN).map((r) => r.status);

  async function startSim(tokenPerMinute = 10): Promise<void> {
    sim = new PaymentServiceSimulator({ merchants: Object.values(MERCHANTS), rateLimits: { tokenPerMinute } });
    await sim.start();
    clock = new SimulatorClock(sim);
  }

  afterEach(async () => {
    await app?.close();
    await sim.stop();
  });

  it('14 payments split over two accounts in one minute: 14 token calls, no 429 from the service', async () => {
    await startSim();
    await startApp({ eu: sim.url, us: sim.url });
    const payments = await Promise.all(
      Array.from({ length: 14 }, (_, i) => client(i % 2 === 0 ? 'eu' : 'us').createPayment({ amount: String(i + 1), currency: 'USD' })),
    );
    expect(new Set(payments.map((p) => p.trxId)).size).toBe(14);
    expect(tokenStatuses()).toEqual(Array.from({ length: 14 }, () => 200));
    expect(sim.requests.filter((r) => r.status === 429)).toHaveLength(0);
    // the shared queue held four token calls for a window
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(60_000);
    // each account paid with its own merchant
    const byMerchant = payments.map((p) => sim.payment(p.trxId!)?.merchantId);
    expect(byMerchant.filter((m) => m === 1)).toHaveLength(7);
    expect(byMerchant.filter((m) => m === 2)).toHaveLength(7);
  });

  it('the share is per service host: accounts on two hosts keep a limit each', async () => {
    // one simulator (with room for more) reached through two host names: two origins, so
    // 6 + 6 token calls stay within the client's 10 a minute of each and nothing waits
    await startSim(100);
    await startApp({ eu: sim.url, us: sim.url.replace('127.0.0.1', 'localhost') });
    await Promise.all(Array.from({ length: 12 }, (_, i) => client(i % 2 === 0 ? 'eu' : 'us').createPayment({ amount: '1', currency: 'USD' })));
    expect(tokenStatuses()).toEqual(Array.from({ length: 12 }, () => 200));
    expect(clock.sleeps).toEqual([]);
  });
});

describe("the shared token line keeps the lowest account's limit", () => {
  const merchants = {
    eu: { merchantId: 1, clientId: 'eu-shop', clientSecret: 'eu-secret', webhookSecret: 'whsec_eu', mode: 'sandbox' as const },
    us: { merchantId: 2, clientId: 'us-shop', clientSecret: 'us-secret', webhookSecret: 'whsec_us', mode: 'sandbox' as const },
    asia: { merchantId: 3, clientId: 'asia-shop', clientSecret: 'asia-secret', webhookSecret: 'whsec_asia', mode: 'sandbox' as const },
  };
  let sim: PaymentServiceSimulator;
  let app: INestApplication;

  afterEach(async () => {
    await app?.close();
    await sim?.stop();
  });

  /** The most token calls the service saw within any one minute. */
  function busiestTokenMinute(from = 0): number {
    const times = sim.requests.slice(from).filter((r) => r.route === TOKEN).map((r) => r.at);
    return Math.max(0, ...times.map((start) => times.filter((t) => t >= start && t < start + 60_000).length));
  }

  it("from the start (before the low-limit account's first call) and after the line went idle and was dropped", async () => {
    sim = new PaymentServiceSimulator({ merchants: Object.values(merchants), rateLimits: { tokenPerMinute: 100 } });
    await sim.start();
    const clock = new SimulatorClock(sim);
    @Global()
    @Module({ providers: [{ provide: PAYMENT_CLIENT_RUNTIME, useValue: { clock, random: () => 0.5 } }], exports: [PAYMENT_CLIENT_RUNTIME] })
    class ClockModule {}
    const account = (name: keyof typeof merchants, baseUrl: string, tokenPerMinute?: number) =>
      PaymentModule.forRoot({
        account: name,
        baseUrl,
        environment: 'sandbox',
        clientId: merchants[name].clientId,
        clientSecret: merchants[name].clientSecret,
        retryBaseDelayMs: 10,
        readEnv: false,
        ...(tokenPerMinute === undefined ? {} : { rateLimits: { tokenPerMinute } }),
      });
    // 'us' allows 2 token calls a minute on the host it shares with 'eu'; 'asia' is on another host name
    @Module({ imports: [ClockModule, account('eu', sim.url), account('us', sim.url, 2), account('asia', sim.url.replace('127.0.0.1', 'localhost'))] })
    class AppModule {}
    app = await NestFactory.create(AppModule, new ExpressAdapter(), { logger: false });
    await app.init();
    const client = (name: keyof typeof merchants) => app.get<PaymentGatewayService>(getPaymentGatewayToken(name));
    const fivePayments = () => Promise.all(Array.from({ length: 5 }, (_, i) => client('eu').createPayment({ amount: String(i + 1), currency: 'USD' })));

    await fivePayments(); // 'us' has made no call yet: was 5 token calls in the first minute
    expect(busiestTokenMinute()).toBe(2);

    sim.advanceTime(61_000); // the line is idle now; a call to another host drops idle lines
    await client('asia').createPayment({ amount: '1', currency: 'USD' });
    const before = sim.requests.length;
    await fivePayments(); // was rebuilt with 'eu''s own 10 a minute
    expect(busiestTokenMinute(before)).toBe(2);
  });
});
