import { Logger, type LoggerService } from '@nestjs/common';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import type { PaymentModuleOptions, ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import type { PaymentClock } from '../../lib/client/payment-client.clock.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import type { PaymentServiceSimulatorOptions } from '../../lib/testing/index.js';

export const SANDBOX_CLIENT = { clientId: 'sandbox-client', clientSecret: 'sandbox-secret', webhookSecret: 'whsec_sandbox' };

/**
 * Client clock that IS the simulator's clock: every client wait (rate-limit window,
 * backoff, Retry-After) moves the simulator forward instead of sleeping, so a minute of
 * service time passes at once. Before jumping it gives requests already on the wire a
 * short real pause to land, else they would reach the simulator "minutes" late (a jump
 * must not happen mid-flight, as real time never jumps).
 */
export class SimulatorClock implements PaymentClock {
  readonly sleeps: number[] = [];
  constructor(
    private readonly sim: PaymentServiceSimulator,
    private readonly settleMs = 25,
  ) {}
  now(): number {
    return this.sim.now();
  }
  async sleep(ms: number): Promise<void> {
    const wait = Math.max(0, Math.ceil(ms));
    this.sleeps.push(wait);
    const until = this.sim.now() + wait;
    await new Promise((resolve) => setTimeout(resolve, this.settleMs));
    // concurrent sleepers coalesce: only the part not yet elapsed is added
    const remaining = until - this.sim.now();
    if (remaining > 0) this.sim.advanceTime(remaining);
  }
}

export interface ClientHarness {
  sim: PaymentServiceSimulator;
  clock: SimulatorClock;
  client: PaymentGatewayService;
  options: ResolvedPaymentOptions;
  /** Requests that reached the simulator for `route` (path after the base). */
  calls(route: string | RegExp, method?: string): ReturnType<PaymentServiceSimulator['requests']['filter']>;
  close(): Promise<void>;
}

export async function startClientHarness(
  clientOptions: PaymentModuleOptions = {},
  simOptions: PaymentServiceSimulatorOptions = {},
): Promise<ClientHarness> {
  // quiet by default; captureLogs() turns logging on to inspect it
  Logger.overrideLogger(false);
  const sim = new PaymentServiceSimulator(simOptions);
  await sim.start();
  const clock = new SimulatorClock(sim);
  const options = resolvePaymentOptions({
    baseUrl: sim.url,
    clientId: SANDBOX_CLIENT.clientId,
    clientSecret: SANDBOX_CLIENT.clientSecret,
    webhookSecret: SANDBOX_CLIENT.webhookSecret,
    httpTimeoutMs: 15_000,
    retryBaseDelayMs: 10,
    retryMaxDelayMs: 60_000,
    ...clientOptions,
  });
  const client = new PaymentGatewayService(options, { clock, random: () => 0.5 });
  return {
    sim,
    clock,
    client,
    options,
    calls: (route, method) =>
      sim.requests.filter(
        (r) => (typeof route === 'string' ? r.route === route : route.test(r.route)) && (!method || r.method === method),
      ),
    close: async () => {
      client.onApplicationShutdown();
      await sim.stop();
    },
  };
}

/** Captures everything Nest's Logger prints while `fn` runs. */
export async function captureLogs<T>(fn: () => Promise<T>): Promise<{ result: T | undefined; error: unknown; lines: string[] }> {
  const lines: string[] = [];
  const sink = (...args: unknown[]) => void lines.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
  const logger: LoggerService = { log: sink, warn: sink, error: sink, debug: sink, verbose: sink, fatal: sink };
  Logger.overrideLogger(logger);
  try {
    return { result: await fn(), error: undefined, lines };
  } catch (error) {
    return { result: undefined, error, lines };
  } finally {
    Logger.overrideLogger(false);
  }
}

/** Returns the error `fn` rejects with (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}
