import { Inject, Injectable, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PAYMENT_RESOLVED_OPTIONS } from '../payment.constants.js';
import { MemoryWebhookEventStore } from './memory-webhook-event.store.js';
import { RedisWebhookEventStore } from './redis-webhook-event.store.js';
import { WebhookEventStore } from './webhook-event-store.interface.js';

// Stores built by the factory below; only these are closed at shutdown, a store
// the user passed in is theirs to close.
const storesCreatedByModule = new WeakSet<WebhookEventStore>();

/** The store the options ask for: `store` wins, else `redisUrl`, else memory. */
export function createWebhookEventStore(options: ResolvedPaymentOptions): WebhookEventStore {
  if (options.store) return options.store;
  const store = options.redisUrl
    ? new RedisWebhookEventStore(options.redisUrl)
    : new MemoryWebhookEventStore({ maxEntries: options.memoryStoreMaxEntries });
  storesCreatedByModule.add(store);
  return store;
}

/** Provides the `WebhookEventStore` token from the resolved module options. */
export function createWebhookEventStoreProvider(): Provider {
  return {
    provide: WebhookEventStore,
    useFactory: createWebhookEventStore,
    inject: [PAYMENT_RESOLVED_OPTIONS],
  };
}

/** Closes the store on application shutdown when the module created it (e.g. quits its Redis connection). */
@Injectable()
export class WebhookEventStoreLifecycle implements OnApplicationShutdown {
  constructor(@Inject(WebhookEventStore) private readonly store: WebhookEventStore) {}

  async onApplicationShutdown(): Promise<void> {
    if (storesCreatedByModule.has(this.store)) {
      storesCreatedByModule.delete(this.store);
      await this.store.close?.();
    }
  }
}

/** Both providers the module needs: the store and the helper that closes it. */
export function createWebhookEventStoreProviders(): Provider[] {
  return [createWebhookEventStoreProvider(), WebhookEventStoreLifecycle];
}
