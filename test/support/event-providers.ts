import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { PaymentEventHandlerRegistry } from '../../lib/events/payment-event-handler.registry.js';
import { PaymentEventMetadataAccessor } from '../../lib/events/payment-event-metadata.accessor.js';
import { PaymentEventDispatcher } from '../../lib/events/payment-event.dispatcher.js';
import { PaymentEventExplorer } from '../../lib/events/payment-event.explorer.js';

/**
 * The event pipeline without PaymentModule: accessor → explorer → registry → dispatcher,
 * for tests that drive the dispatcher directly (the module also needs DiscoveryModule).
 */
export const EVENT_PIPELINE_PROVIDERS = [
  PaymentEventMetadataAccessor,
  PaymentEventHandlerRegistry,
  PaymentEventExplorer,
  PaymentEventDispatcher,
];

/** The dispatcher of one account of a booted app (each `forRoot()` has its own). */
export function accountDispatcher(app: { get<T>(token: unknown, options?: { strict: boolean }): T }, account = 'default'): PaymentEventDispatcher {
  const dispatcher = app.get<PaymentAccountRegistry>(PaymentAccountRegistry, { strict: false }).require(account).dispatcher;
  if (!dispatcher) throw new Error(`account ${account} has no dispatcher`);
  return dispatcher;
}
