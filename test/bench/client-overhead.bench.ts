// Benchmark 3: PaymentGatewayService.getPaymentStatus against raw axios on a keep-alive
// agent, same GET, same simulator, same concurrency.
import http from 'node:http';
import axios from 'axios';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { type BenchRow, fmt, interleave, median } from './bench-util.js';

async function pool(concurrency: number, total: number, op: () => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        await op();
      }
    }),
  );
  return total / (Number(process.hrtime.bigint() - start) / 1e9);
}

export async function clientOverhead(settings: { concurrency: number; opsPerRound: number; pairs: number }): Promise<BenchRow[]> {
  const sim = new PaymentServiceSimulator({ rateLimits: false });
  await sim.start();
  const options = resolvePaymentOptions({
    baseUrl: sim.url,
    clientId: 'sandbox-client',
    clientSecret: 'sandbox-secret',
    rateLimits: false,
    httpTimeoutMs: 10_000,
  });
  const client = new PaymentGatewayService(options);
  const agent = new http.Agent({ keepAlive: true });
  try {
    const cold = sim.connectionCount;
    const payment = await client.createPayment({ amount: '10.00', currency: 'USD' });
    const setupConnections = sim.connectionCount - cold;
    const tokenResponse = await axios.post(
      `${options.apiBaseUrl}/authentication/token`,
      { client_id: 'sandbox-client', client_secret: 'sandbox-secret' },
      { httpAgent: agent },
    );
    const token = tokenResponse.data.data.access_token as string;
    const raw = axios.create({
      baseURL: options.apiBaseUrl,
      httpAgent: agent,
      headers: { authorization: `Bearer ${token}` },
    });
    const statusUrl = `${options.endpoints.paymentStatus}?${options.endpoints.paymentStatusParam}=${encodeURIComponent(payment.trxId!)}`;

    const viaClient = async () => {
      const status = await client.getPaymentStatus(payment.trxId!);
      if (status.trxId !== payment.trxId) throw new Error('client read the wrong payment');
    };
    const viaAxios = async () => {
      const res = await raw.get(statusUrl);
      if (res.data.data.trxId !== payment.trxId) throw new Error('axios read the wrong payment');
    };
    // New connections are counted per client round (and for the token + create above): a
    // round of N reads at concurrency C opens at most C when keep-alive works, N without it.
    // Between rounds the server may close idle sockets (its keepAliveTimeout), so rounds are
    // counted separately.
    const perRound: number[] = [setupConnections];
    // proof that every client read reached the simulator (nothing served from a cache)
    let missingReads = 0;
    const measureClient = async () => {
      const before = sim.connectionCount;
      const requestsBefore = sim.requests.length;
      const ops = await pool(settings.concurrency, settings.opsPerRound, viaClient);
      perRound.push(sim.connectionCount - before);
      missingReads += Math.max(0, settings.opsPerRound - (sim.requests.length - requestsBefore));
      sim.clearRequests();
      return ops;
    };
    await measureClient();
    await pool(settings.concurrency, settings.opsPerRound, viaAxios);
    const rounds = await interleave(settings.pairs, measureClient, () => pool(settings.concurrency, settings.opsPerRound, viaAxios));
    const ratio = median(rounds.a.map((ops, i) => ops / rounds.b[i]!));
    return [
      {
        benchmark: '3. getPaymentStatus vs raw axios',
        measured: `${fmt(median(rounds.a))} vs ${fmt(median(rounds.b))} req/s, concurrency ${settings.concurrency}${missingReads ? ` (${missingReads} reads never reached the simulator)` : ''}`,
        figure: ratio.toFixed(3),
        target: '≥ 0.90',
        pass: ratio >= 0.9 && missingReads === 0,
      },
      {
        benchmark: '3. client keep-alive',
        measured: `new TCP connections per round of ${fmt(settings.opsPerRound)} client reads: ${perRound.slice(1).join(', ')}`,
        figure: `max ${Math.max(...perRound)}`,
        target: `≤ ${settings.concurrency}`,
        pass: Math.max(...perRound) <= settings.concurrency,
      },
    ];
  } finally {
    client.onApplicationShutdown();
    agent.destroy();
    await sim.stop();
  }
}
