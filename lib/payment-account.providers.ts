import { Logger, type Provider, type Type } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { type PaymentAccountPart, PaymentAccountRegistry } from './accounts/payment-account.registry.js';
import { getPaymentGatewayToken, getPaymentOptionsToken, getWebhookEventStoreToken } from './accounts/payment-account.tokens.js';
import { PaymentGatewayService } from './client/payment-gateway.service.js';
import type { PaymentClientRuntime } from './client/payment-client.clock.js';
import { PaymentIpRateLimits } from './client/payment-rate-limiter.js';
import { PaymentConfigurationError } from './config/payment-configuration.errors.js';
import { paymentEnvName, paymentEnvSources, type PaymentEnvValues, readPaymentEnv } from './config/payment-env.js';
import type { PaymentModuleOptions, ResolvedPaymentOptions } from './config/payment-module-options.interface.js';
import type { ModuleWebhookIdempotencyDefaults } from './webhooks/webhook-idempotency.interface.js';
import { resolvePaymentOptions } from './config/payment-options.resolver.js';
import { signatureReplayWindowMs } from './config/payment-options.validation.js';
import { PaymentEventDispatcher } from './events/payment-event.dispatcher.js';
import { PaymentAccountHealthProbes } from './health/payment-account-health.probes.js';
import type { PaymentModuleExtras } from './payment.module-definition.js';
import {
  DEFAULT_PAYMENT_ACCOUNT,
  PAYMENT_ACCOUNT_CLIENT,
  PAYMENT_ACCOUNT_LATE_HOOKS,
  PAYMENT_ACCOUNT_QUEUE,
  PAYMENT_ACCOUNT_WORKER,
  PAYMENT_ACCOUNT_OPTIONS,
  PAYMENT_CLIENT_RUNTIME,
  PAYMENT_ACCOUNT_MODULE,
  PAYMENT_MODULE_OPTIONS,
  PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS,
} from './payment.constants.js';
import { loadBullMq } from './queue/bullmq.loader.js';
import { createPaymentQueueProviders } from './queue/payment-queue.providers.js';
import { createWebhookEventStoreProviders, WebhookEventStoreLifecycle } from './stores/webhook-event-store.providers.js';
import { createPaymentWebhookRoute } from './webhooks/payment-webhook.controller.js';
import { PaymentWebhookProcessor } from './webhooks/payment-webhook.processor.js';
import { accountDeduplicationSettings } from './webhooks/webhook-deduplication.settings.js';

/** Controllers, providers and exports of one account's module instance. */
export interface PaymentAccountDefinition {
  controllers: Type<unknown>[];
  providers: Provider[];
  exports: Array<string | symbol | Type<unknown>>;
}

/**
 * Everything one `forRoot()` registers for its account. Internals use the module-local
 * `PAYMENT_ACCOUNT_*` tokens; only the account's public tokens are exported, so accounts
 * never see (or collide with) each other's providers.
 */
export function createPaymentAccountProviders(account: string, extras: PaymentModuleExtras): PaymentAccountDefinition {
  const optionsToken = getPaymentOptionsToken(account);
  const clientToken = getPaymentGatewayToken(account);
  const route = extras.webhookRoute === false ? undefined : createPaymentWebhookRoute(extras.webhookDecorators, extras.webhookClassDecorators, account);
  const providers: Provider[] = [
    { provide: PAYMENT_ACCOUNT_MODULE, useValue: account },
    {
      provide: optionsToken,
      inject: [PAYMENT_MODULE_OPTIONS, { token: ConfigService, optional: true }],
      useFactory: (options: PaymentModuleOptions | undefined, config?: ConfigService) => {
        // The host's ConfigService when it has a global ConfigModule (its env file and
        // validation choices stand); else the process environment. The module never loads a .env itself.
        // A test's fake of it may have only what the app calls (getOrThrow): then the process environment too.
        const read = typeof config?.get === 'function' ? (name: string): unknown => config.get(name) : readProcessEnv;
        const readEnv = extras.readEnv !== false;
        const env = readEnv ? readPaymentEnv(read, account) : {};
        if (readEnv && read !== readProcessEnv && options?.baseUrl == null) warnIfConfigServiceHidesEnv(env, account);
        // undefined only from a forRootAsync() factory (forRoot() always passes an object): refused, not read as "no options"
        const resolved = resolvePaymentOptions(options as PaymentModuleOptions, env, account, { readEnv });
        // before the store needs ioredis: one error naming every missing package, not one per boot
        if (resolved.processing === 'queue') {
          const setting = options?.processing === 'queue' ? 'the processing option' : paymentEnvSources('processing', account);
          loadBullMq(undefined, { account, setting });
        }
        return resolved;
      },
    },
    {
      // registered here, from whatever the public token gives: a test that overrides that token
      // (Test.overrideProvider(getPaymentOptionsToken('eu'))) still has its account registered
      provide: PAYMENT_ACCOUNT_OPTIONS,
      inject: [optionsToken, PaymentAccountRegistry],
      useFactory: (resolved: ResolvedPaymentOptions, accounts: PaymentAccountRegistry) => {
        if (resolved?.account !== account) {
          const given = resolved?.account === undefined ? 'no account name' : `those of account '${resolved.account}'`;
          throw new PaymentConfigurationError([`the options provided for ${optionsToken} are ${given}: resolve them with account '${account}'`], account);
        }
        accounts.register(resolved);
        warnIfKeyPrefixRunsIntoAccount(resolved);
        return resolved;
      },
    },
    {
      provide: clientToken,
      inject: [PAYMENT_ACCOUNT_OPTIONS, { token: PAYMENT_CLIENT_RUNTIME, optional: true }, PaymentIpRateLimits],
      useFactory: (options: ResolvedPaymentOptions, runtime: Partial<PaymentClientRuntime> | undefined, ipRateLimits: PaymentIpRateLimits) => {
        warnIfLiveOverPlainHttp(options);
        return new PaymentGatewayService(options, runtime, ipRateLimits);
      },
    },
    { provide: PAYMENT_ACCOUNT_CLIENT, useExisting: clientToken },
    ...createWebhookEventStoreProviders(account),
    PaymentEventDispatcher,
    PaymentWebhookProcessor,
    PaymentAccountHealthProbes,
    // queue mode (null providers when the account processes inline)
    ...createPaymentQueueProviders(),
    ...(route?.providers ?? routeExtrasWithoutRoute(account, extras)),
    {
      // the account's parts with lifecycle hooks: run by the registry when Nest will not (a lazily loaded module)
      provide: PAYMENT_ACCOUNT_LATE_HOOKS,
      // in stop order: each part before those it uses
      inject: [PaymentAccountRegistry, PAYMENT_ACCOUNT_WORKER, PaymentWebhookProcessor, PAYMENT_ACCOUNT_QUEUE, PaymentEventDispatcher, WebhookEventStoreLifecycle, clientToken],
      useFactory: (accounts: PaymentAccountRegistry, ...parts: Array<PaymentAccountPart | null>) => {
        if (accounts.started) accounts.adoptLateHooks(parts);
        return accounts.started;
      },
    },
  ];
  const exports: PaymentAccountDefinition['exports'] = [optionsToken, clientToken, getWebhookEventStoreToken(account)];
  if (account === DEFAULT_PAYMENT_ACCOUNT) {
    // Defaults of the interceptor building block, for routes of the host's own.
    providers.push({
      provide: PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS,
      inject: [PAYMENT_ACCOUNT_OPTIONS],
      useFactory: (options: ResolvedPaymentOptions): ModuleWebhookIdempotencyDefaults => ({
        ...accountDeduplicationSettings(options),
        shutdownTimeoutMs: options.webhookShutdownTimeoutMs,
        minRetentionMs: signatureReplayWindowMs(options.webhookToleranceSeconds),
      }),
    });
    exports.push(PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS);
  }
  return { controllers: route ? [route.controller] : [], providers, exports };
}

/**
 * With `webhookRoute: false` the route extras apply to nothing: someone moving to a route of
 * their own who leaves `webhookDecorators: [Public()]` here would find every delivery refused
 * by their guard. Said at boot (a provider, so once per app and through the app's logger).
 */
function routeExtrasWithoutRoute(account: string, extras: PaymentModuleExtras): Provider[] {
  const given = (['webhookDecorators', 'webhookClassDecorators', 'webhookImports'] as const).filter((key) => (extras[key]?.length ?? 0) > 0);
  if (given.length === 0) return [];
  return [
    {
      // a token of its own per call (not a constant): one account's warning must not replace another's
      provide: Symbol('nestjs-payment-gateway:route-extras-without-route'),
      useFactory: () =>
        new Logger('PaymentWebhooks').warn(
          `Account '${account}': ${given.join(' and ')} apply to the module's webhook route, which webhookRoute: false turns off, so they apply ` +
            'to nothing: put the decorators on the method of your own route that calls PaymentWebhookReceiver.receive()',
        ),
    },
  ];
}

const readProcessEnv = (name: string): unknown => process.env[name];

/**
 * Said before the boot error a missing base URL makes when it is in `process.env` but the app's
 * ConfigService gave nothing for it: the error names a variable that looks set. A host's choice
 * (`skipProcessEnv`) or a test's `useMocker`, which hands the optional ConfigService a mock.
 */
function warnIfConfigServiceHidesEnv(env: PaymentEnvValues, account: string): void {
  const variable = paymentEnvName('baseUrl', account);
  if (env.baseUrl !== undefined || !process.env[variable]) return;
  new Logger('PaymentModule').warn(
    `Account '${account}': ${variable} is set in process.env, but the app's ConfigService returns nothing for it, and the module reads ` +
      "the ConfigService when the app has one (a ConfigModule with skipProcessEnv, or a test's useMocker() that mocks ConfigService: return undefined for it)",
  );
}

/** Hosts a plain `http://` base URL may name without a warning: the request never leaves the machine. */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A live account whose base URL is `http://` to another machine sends its client secret and bearer
 * tokens unencrypted. Said at boot rather than refused: a TLS-terminating egress proxy or sidecar
 * is a real setup, and only the host knows it has one.
 */
function warnIfLiveOverPlainHttp(options: ResolvedPaymentOptions): void {
  if (options.environment !== 'live') return;
  const url = new URL(options.apiBaseUrl);
  if (url.protocol !== 'http:' || LOOPBACK_HOSTS.has(url.hostname) || url.hostname.endsWith('.localhost')) return;
  new Logger('PaymentGatewayService').warn(
    `Account '${options.account}' is live but its base URL is plain http:// (${url.host}): the client secret and bearer tokens ` +
      'travel unencrypted unless something on the way (an egress proxy, a sidecar) adds TLS; use https://',
  );
}

/**
 * Redis keys are `<redisKeyPrefix><account>:…`. A prefix that ends with a character an account
 * name may have runs into the name, and two apps' keys can then meet (`shop-e` + `u` is `shop-` +
 * `eu`), each taking the other's events for processed ones. Said at boot rather than refused: an
 * app whose keys already exist under such a prefix would lose them.
 */
function warnIfKeyPrefixRunsIntoAccount(options: ResolvedPaymentOptions): void {
  // used by the Redis store made from redisUrl (a store of your own wins over it) and the queue
  if ((options.redisUrl === undefined || options.store !== undefined) && options.processing !== 'queue') return;
  const prefix = options.redisKeyPrefix;
  if (!/[A-Za-z0-9._-]$/.test(prefix)) return;
  const account = options.account;
  // another split of this app's own keys, with an account name that could be registered
  const splits: Array<[string, string]> = [
    [prefix + account.slice(0, 1), account.slice(1)],
    [prefix.slice(0, -1), prefix.slice(-1) + account],
  ];
  const other = splits.find(([otherPrefix, otherAccount]) => otherPrefix !== '' && /^[A-Za-z0-9]/.test(otherAccount));
  const example = other ? ` (prefix '${other[0]}' with account '${other[1]}' makes the keys yours make, '${prefix}' with '${account}')` : '';
  new Logger('PaymentModule').warn(
    `Account '${account}': redisKeyPrefix '${prefix}' ends with a character account names may have, so another app's ` +
      `prefix and account can make the same Redis keys${example}; end it with ':' ('${prefix}:')`,
  );
}
