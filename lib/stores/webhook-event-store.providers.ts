import { Inject, Injectable, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { getWebhookEventStoreToken } from '../accounts/payment-account.tokens.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PAYMENT_ACCOUNT_OPTIONS, PAYMENT_ACCOUNT_STORE } from '../payment.constants.js';
import { MemoryWebhookEventStore } from './memory-webhook-event.store.js';
import { PaymentRedisConnections } from './redis-connections.service.js';
import { RedisWebhookEventStore } from './redis-webhook-event.store.js';
import type { WebhookEventStore } from './webhook-event-store.interface.js';

// Stores built by the factory below, with what closes each; only these are closed at
// shutdown, a store the user passed in is theirs to close.
const storesCreatedByModule = new WeakMap<WebhookEventStore, () => Promise<void>>();

/**
 * The Redis URL of the store the module builds: `redisUrl`, else, in queue mode, the queue's
 * Redis (web and worker instances must share the claims); undefined for a memory or custom store.
 * Health details and the redaction of error texts use the same answer.
 */
export function webhookStoreRedisUrl(
  options: Pick<ResolvedPaymentOptions, 'store' | 'redisUrl' | 'processing' | 'queueRedisUrl'>,
): string | undefined {
  if (options.store) return undefined;
  return options.redisUrl ?? (options.processing === 'queue' ? options.queueRedisUrl : undefined);
}

/**
 * The store the options ask for: `store` wins, else `redisUrl` (on the app's shared
 * connection for that URL when `connections` is given), else, in queue mode, the queue's
 * Redis (web and worker instances must share the claims), else memory.
 */
export function createWebhookEventStore(options: ResolvedPaymentOptions, connections?: PaymentRedisConnections): WebhookEventStore {
  if (options.store) return options.store;
  const redisUrl = webhookStoreRedisUrl(options);
  if (!redisUrl) {
    const store = new MemoryWebhookEventStore({ maxEntries: options.memoryStoreMaxEntries });
    storesCreatedByModule.set(store, () => store.close());
    return store;
  }
  const storeOptions = { keyPrefix: options.redisKeyPrefix, operationTimeoutMs: options.redisTimeoutMs, redactUrl: redisUrl };
  if (!connections) {
    const store = new RedisWebhookEventStore(redisUrl, storeOptions);
    storesCreatedByModule.set(store, () => store.close());
    return store;
  }
  // the store holds the shared connection until it is closed itself
  const { value: store, release } = connections.acquireFor(redisUrl, options.redisTimeoutMs, (shared) => new RedisWebhookEventStore(shared, storeOptions));
  storesCreatedByModule.set(store, async () => {
    await store.close();
    await release();
  });
  return store;
}

/** Closes the store on application shutdown when the module created it (e.g. quits its Redis connection). */
@Injectable()
export class WebhookEventStoreLifecycle implements OnApplicationShutdown {
  constructor(@Inject(PAYMENT_ACCOUNT_STORE) private readonly store: WebhookEventStore) {}

  async onApplicationShutdown(): Promise<void> {
    const close = storesCreatedByModule.get(this.store);
    if (close !== undefined) {
      storesCreatedByModule.delete(this.store);
      await close();
    }
  }
}

/** One account's store (under its public token and the module-local alias) and the helper that closes it. */
export function createWebhookEventStoreProviders(account: string): Provider[] {
  const token = getWebhookEventStoreToken(account);
  return [
    {
      provide: token,
      useFactory: createWebhookEventStore,
      inject: [PAYMENT_ACCOUNT_OPTIONS, { token: PaymentRedisConnections, optional: true }],
    },
    { provide: PAYMENT_ACCOUNT_STORE, useExisting: token },
    WebhookEventStoreLifecycle,
  ];
}
