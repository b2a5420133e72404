import type { Provider } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PaymentEventDispatcher } from '../events/payment-event.dispatcher.js';
import { PAYMENT_ACCOUNT_OPTIONS, PAYMENT_ACCOUNT_QUEUE, PAYMENT_ACCOUNT_STORE, PAYMENT_ACCOUNT_WORKER } from '../payment.constants.js';
import { PaymentRedisConnections } from '../stores/redis-connections.service.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import { loadBullMq } from './bullmq.loader.js';
import { PaymentEventQueue } from './payment-event-queue.js';
import { PaymentEventWorker } from './payment-event.worker.js';
import { PaymentWorkerShutdown } from './payment-worker-shutdown.service.js';
import { queueRedisProbe } from './payment-queue-health.probes.js';

/**
 * One account's queue-mode providers. The processing mode is only known once the options
 * (env included) are resolved, so they are always registered and are `null` unless the
 * account runs with `processing: 'queue'`; only then is `bullmq` loaded (a missing one stops
 * the boot with `BullMqMissingError`). The worker exists only where `queueWorker` is on.
 */
export function createPaymentQueueProviders(): Provider[] {
  return [
    {
      provide: PAYMENT_ACCOUNT_QUEUE,
      inject: [PAYMENT_ACCOUNT_OPTIONS, PAYMENT_ACCOUNT_STORE, PaymentRedisConnections, PaymentAccountRegistry],
      useFactory: (
        options: ResolvedPaymentOptions,
        store: WebhookEventStore,
        connections: PaymentRedisConnections,
        accounts: PaymentAccountRegistry,
      ): PaymentEventQueue | null => {
        if (options.processing !== 'queue') return null;
        const bull = loadBullMq();
        // validation guarantees a URL in queue mode; the queue holds the connection until it closes
        const { value: queue, client: connection } = connections.acquireFor(options.queueRedisUrl!, options.redisTimeoutMs, (shared, release) =>
          new PaymentEventQueue(bull, options, store, shared, release),
        );
        accounts.attachQueue(options.account, queue);
        accounts.attachProbe(options.account, queueRedisProbe(options.account, connection, options.queueRedisUrl!, options.redisTimeoutMs, options.redisKeyPrefix));
        return queue;
      },
    },
    {
      provide: PAYMENT_ACCOUNT_WORKER,
      inject: [
        PAYMENT_ACCOUNT_OPTIONS,
        PAYMENT_ACCOUNT_STORE,
        PaymentEventDispatcher,
        // the worker stops before the producer side closes
        PAYMENT_ACCOUNT_QUEUE,
        PaymentWorkerShutdown,
      ],
      useFactory: (
        options: ResolvedPaymentOptions,
        store: WebhookEventStore,
        dispatcher: PaymentEventDispatcher,
        queue: PaymentEventQueue | null,
        shutdown: PaymentWorkerShutdown,
      ): PaymentEventWorker | null =>
        queue !== null && options.queueWorker ? new PaymentEventWorker(loadBullMq(), options, store, dispatcher, queue, shutdown) : null,
    },
  ];
}
