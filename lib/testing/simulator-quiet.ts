import { setTimeout as realSleep } from 'node:timers/promises';
import { MAX_TIMER_MS } from '../common/promise-timeout.util.js';
import type { SimulatorPaymentsHandler } from './simulator-payments.handler.js';
import type { SimulatorWebhookDeliverer } from './simulator-webhook.deliverer.js';

/**
 * Resolves when no payment confirmation, webhook delivery or retry is pending; events held back
 * by `outOfOrder` are released once everything else is quiet. Rejects after `timeoutMs`, naming
 * what is still pending.
 *
 * Sessions already past `paymentSessionTtlMs` expire before it resolves and their `payment.expired`
 * is waited for; a session whose TTL is still running is not: a `manual` payment waits for the test,
 * so counting it would hold every wait for the whole TTL (or for ever on a clock that stands still).
 */
export async function waitUntilQuiet(payments: SimulatorPaymentsHandler, deliverer: SimulatorWebhookDeliverer, timeoutMs?: number): Promise<void> {
  // a timer past MAX_TIMER_MS fires at once (and NaN, a fraction, a negative number make no sense either)
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs >= 0 && timeoutMs <= MAX_TIMER_MS)) {
    throw new RangeError(`waitForDeliveries: timeoutMs must be a whole number of ms from 0 to ${MAX_TIMER_MS} (not ${String(timeoutMs)})`);
  }
  // node:timers/promises only: under jest's fake timers Date.now(), setTimeout and (in a
  // CommonJS test) process.hrtime stand still, so the wait and its deadline use real timers
  let expired = false;
  const deadline = new AbortController();
  if (timeoutMs !== undefined) {
    realSleep(timeoutMs, undefined, { signal: deadline.signal, ref: false }).then(
      () => (expired = true),
      () => undefined,
    );
  }
  try {
    for (;;) {
      while (payments.pendingConfirmations > 0 || !deliverer.quiet) {
        if (expired) {
          const pending = deliverer.states.filter((d) => !['delivered', 'abandoned', 'no-url', 'paused'].includes(d.state));
          throw new Error(
            `Simulator still busy after ${timeoutMs} ms: ${payments.pendingConfirmations} confirmation(s), ` +
              `deliveries ${JSON.stringify(pending.map((d) => `${d.eventType}:${d.state}#${d.attempts}`))}`,
          );
        }
        await realSleep(2);
      }
      // expiries due by now (a timer about to fire, a clock moved by hand) are work like the rest
      if (payments.expireStaleSessions()) continue;
      if (!deliverer.hasHeld) return;
      deliverer.releaseAll();
    }
  } finally {
    deadline.abort();
  }
}
