import { Inject, Injectable } from '@nestjs/common';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import type { PaymentGatewayService } from '../client/payment-gateway.service.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { redactRedisUrl } from '../config/redact-url.js';
import { PAYMENT_ACCOUNT_CLIENT, PAYMENT_ACCOUNT_OPTIONS, PAYMENT_ACCOUNT_STORE } from '../payment.constants.js';
import { MemoryWebhookEventStore } from '../stores/memory-webhook-event.store.js';
import { RedisWebhookEventStore } from '../stores/redis-webhook-event.store.js';
import { webhookStoreRedisUrl } from '../stores/webhook-event-store.providers.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import type { PaymentHealthProbe } from './payment-health.interface.js';

/**
 * The `store` probe of an account: a small Redis write for a Redis store (details: `kind`,
 * the URL without its password), the store's own `ping()` for a custom store that has one;
 * a memory store, or a custom one without `ping()`, is up.
 */
function webhookStoreProbe(
  account: string,
  store: WebhookEventStore,
  options: Pick<ResolvedPaymentOptions, 'redisUrl' | 'store' | 'processing' | 'queueRedisUrl'>,
): PaymentHealthProbe {
  const kind = store instanceof RedisWebhookEventStore ? 'redis' : store instanceof MemoryWebhookEventStore ? 'memory' : 'custom';
  // The URL is shown only when the module built the store from it.
  const url = webhookStoreRedisUrl(options);
  const details: Record<string, unknown> = { kind };
  if (url !== undefined) details.url = redactRedisUrl(url);
  if (kind === 'custom' && typeof store.ping !== 'function') details.pinged = false;
  return {
    account,
    component: 'store',
    details,
    check: async () => {
      await store.ping?.();
    },
  };
}

/**
 * The on-demand `authentication` probe of an account: a token can be obtained from the service.
 * An account without clientId and clientSecret (webhook-only, a valid setup) calls nothing: it is
 * up with `configured: false`, not down for good, and the detail shows nothing was checked.
 */
function authenticationProbe(
  account: string,
  client: Pick<PaymentGatewayService, 'checkAuthentication'>,
  options: Pick<ResolvedPaymentOptions, 'clientId'>,
): PaymentHealthProbe {
  const configured = options.clientId !== undefined;
  return {
    account,
    component: 'authentication',
    onDemand: true,
    ...(configured ? {} : { details: { configured: false } }),
    check: async (signal) => {
      // one attempt, a failure answered again for 30 s: a readiness probe leaves the token limit to the app
      if (configured) await client.checkAuthentication({ signal });
    },
  };
}

/** Registers one account's probes when the account's providers are created. */
@Injectable()
export class PaymentAccountHealthProbes {
  constructor(
    @Inject(PAYMENT_ACCOUNT_OPTIONS) options: ResolvedPaymentOptions,
    @Inject(PAYMENT_ACCOUNT_STORE) store: WebhookEventStore,
    @Inject(PAYMENT_ACCOUNT_CLIENT) client: PaymentGatewayService,
    accounts: PaymentAccountRegistry,
  ) {
    accounts.attachProbe(options.account, webhookStoreProbe(options.account, store, options));
    accounts.attachProbe(options.account, authenticationProbe(options.account, client, options));
  }
}
