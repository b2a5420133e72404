import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { PaymentAccountRegistry } from './accounts/payment-account.registry.js';
import { PaymentIpRateLimits } from './client/payment-rate-limiter.js';
import { PaymentEventHandlerRegistry } from './events/payment-event-handler.registry.js';
import { PaymentEventMetadataAccessor } from './events/payment-event-metadata.accessor.js';
import { PaymentEventExplorer } from './events/payment-event.explorer.js';
import { PaymentHealthIndicator } from './health/payment-health.indicator.js';
import { PaymentDeadLetterService } from './queue/payment-dead-letter.service.js';
import { PaymentWorkerShutdown } from './queue/payment-worker-shutdown.service.js';
import { PaymentRedisConnections } from './stores/redis-connections.service.js';
import { PaymentWebhookReceiver } from './webhooks/payment-webhook.receiver.js';

/**
 * What every account shares, once per app whatever the number of `PaymentModule.forRoot()`
 * calls; imported (and re-exported) by each account's module:
 * - the account registry, the handler registry and the explorer that fills it;
 * - the Redis connections of the accounts' stores and queues;
 * - the buckets of the service's per-IP token limit the accounts' clients share;
 * - the public `PaymentWebhookReceiver` and `PaymentDeadLetterService`, and the queue workers' shutdown.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    PaymentAccountRegistry,
    PaymentEventMetadataAccessor,
    PaymentEventHandlerRegistry,
    PaymentEventExplorer,
    PaymentWebhookReceiver,
    PaymentRedisConnections,
    PaymentIpRateLimits,
    // health: the public indicator that runs the probes each account attached to the registry
    PaymentHealthIndicator,
    // queue mode: the public dead-letter service (the accounts' queues are in the account registry),
    // and the workers' shutdown, which stops every account's worker at once
    PaymentDeadLetterService,
    PaymentWorkerShutdown,
  ],
  exports: [
    PaymentAccountRegistry,
    PaymentEventHandlerRegistry,
    PaymentRedisConnections,
    PaymentIpRateLimits,
    PaymentWebhookReceiver,
    PaymentHealthIndicator,
    PaymentDeadLetterService,
    PaymentWorkerShutdown,
  ],
})
export class PaymentCoreModule {}
