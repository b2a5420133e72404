import { stripUndefined } from '../common/strip-undefined.util.js';
import { SimulatorAuthHandler } from './simulator-auth.handler.js';
import { SimulatorClock } from './simulator.clock.js';
import { DEFAULT_MERCHANT } from './simulator.constants.js';
import { SimulatorEventPublisher } from './simulator-event.publisher.js';
import type { SimulatorFaults } from './simulator-faults.js';
import { SimulatorPaymentsHandler } from './simulator-payments.handler.js';
import { SimulatorPayoutsHandler } from './simulator-payouts.handler.js';
import { SimulatorRateLimiter, SPEC_RATE_LIMITS } from './simulator-rate-limiter.js';
import { SimulatorRefundsHandler } from './simulator-refunds.handler.js';
import { SimulatorRouter } from './simulator.router.js';
import { SimulatorServer } from './simulator-server.js';
import { SimulatorState } from './simulator.state.js';
import { SimulatorSubaccountsHandler } from './simulator-subaccounts.handler.js';
import type { PaymentServiceSimulatorOptions } from './simulator.types.js';
import { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';

/** The parts `PaymentServiceSimulator` drives; the handlers it does not call are reached through the router. */
export interface SimulatorParts {
  clock: SimulatorClock;
  state: SimulatorState;
  limiter: SimulatorRateLimiter;
  deliverer: SimulatorWebhookDeliverer;
  publisher: SimulatorEventPublisher;
  paymentsHandler: SimulatorPaymentsHandler;
  payoutsHandler: SimulatorPayoutsHandler;
  router: SimulatorRouter;
  server: SimulatorServer;
}

/**
 * Builds the simulator's parts from its (already checked) options and wires them to each other:
 * one state, clock, rate limiter and event publisher shared by every handler. `now` is the
 * simulator's own clock read, for the rate limiter and the webhook deliverer.
 */
export function assembleSimulator(options: PaymentServiceSimulatorOptions, faults: SimulatorFaults, now: () => number): SimulatorParts {
  const clock = new SimulatorClock(options.now);
  const state = new SimulatorState(options.merchants ?? [DEFAULT_MERCHANT]);
  const rl = options.rateLimits ?? true;
  const limiter = new SimulatorRateLimiter(
    now,
    // a limit given as undefined keeps the spec's value (it would switch the limit off)
    rl === false ? undefined : { ...SPEC_RATE_LIMITS, ...(rl === true ? {} : stripUndefined(rl)) },
  );
  const deliverer = new SimulatorWebhookDeliverer({
    target: (id) => {
      const m = state.merchants.get(id);
      return m && { merchantId: id, webhookUrl: m.webhookUrl, webhookSecret: m.settings.webhookSecret };
    },
    now,
    signatureNow: () => (options.signatureClock ?? Date.now)(),
    timeScale: options.webhookTimeScale ?? 1e-5,
    timeoutMs: options.deliveryTimeoutMs ?? 5000,
  });
  const publisher = new SimulatorEventPublisher(state, clock, deliverer);
  const auth = new SimulatorAuthHandler(state, clock, limiter, options.tokenRequest);
  const subaccounts = new SimulatorSubaccountsHandler(state, publisher, auth);
  const paymentsHandler = new SimulatorPaymentsHandler(state, clock, publisher, auth, subaccounts, options);
  const payoutsHandler = new SimulatorPayoutsHandler(state, clock, publisher, auth);
  const refunds = new SimulatorRefundsHandler(state, clock, publisher, auth);
  const router = new SimulatorRouter({ auth, payments: paymentsHandler, refunds, payouts: payoutsHandler, subaccounts });
  const server = new SimulatorServer(options, clock, faults, router);
  return { clock, state, limiter, deliverer, publisher, paymentsHandler, payoutsHandler, router, server };
}
