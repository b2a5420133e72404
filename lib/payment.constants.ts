/*
 * Every injection token and metadata key of the package, in one place (and the API base paths). Tokens that depend
 * on an account name are built by the functions in `accounts/payment-account.tokens.ts`;
 * the store's token shares its name with the `WebhookEventStore` interface and lives
 * beside it (the pattern of @nestjs/throttler's storage token).
 */

/** Name of the account registered by `PaymentModule.forRoot()` without `account`. @publicApi */
export const DEFAULT_PAYMENT_ACCOUNT = 'default';

/** The options object given to `forRoot()` (or returned by the async factory), before env merge and validation. */
export const PAYMENT_MODULE_OPTIONS = Symbol('nestjs-payment-gateway:module-options');

// Tokens below are local to one account's module instance: every `forRoot()` provides its
// own value under the same token and never exports it, so accounts cannot see each other's.
/** @internal this account's resolved options */
export const PAYMENT_ACCOUNT_OPTIONS = Symbol('nestjs-payment-gateway:account-options');
/** Provided (a plain value) by every forRoot() / forRootAsync() module: a bare `imports: [PaymentModule]` lacks it. */
export const PAYMENT_ACCOUNT_MODULE = Symbol('nestjs-payment-gateway:account-module');
/** @internal this account's `PaymentGatewayService` */
export const PAYMENT_ACCOUNT_CLIENT = Symbol('nestjs-payment-gateway:account-client');
/** @internal this account's webhook event store */
export const PAYMENT_ACCOUNT_STORE = Symbol('nestjs-payment-gateway:account-store');
/** @internal this account's `PaymentEventQueue` in queue mode, `null` inline */
export const PAYMENT_ACCOUNT_QUEUE = Symbol('nestjs-payment-gateway:account-queue');
/** @internal this account's `PaymentEventWorker` in queue mode with a worker, else `null` */
export const PAYMENT_ACCOUNT_WORKER = Symbol('nestjs-payment-gateway:account-worker');
/** @internal runs the lifecycle hooks of an account loaded after bootstrap (see `PaymentAccountRegistry.adoptLateHooks`) */
export const PAYMENT_ACCOUNT_LATE_HOOKS = Symbol('nestjs-payment-gateway:account-late-hooks');
/** @internal where (and whether) this account's webhook route was registered */
export const PAYMENT_WEBHOOK_ROUTE = Symbol('nestjs-payment-gateway:webhook-route');

/** Optional `Partial<PaymentClientRuntime>` (clock, random) for every `PaymentGatewayService`. @publicApi */
export const PAYMENT_CLIENT_RUNTIME = Symbol('nestjs-payment-gateway:client-runtime');

/** Defaults of `PaymentWebhookIdempotencyInterceptor` (the module fills them from the default account). */
export const PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS = Symbol('nestjs-payment-gateway:webhook-idempotency-options');

/** Reflect-metadata key `@OnPaymentEvent` stores on a handler method. */
export const PAYMENT_EVENT_HANDLER_METADATA = 'payment-gateway:event-handler';

/** Reflect-metadata key of `@WebhookIdempotencyKey`. */
export const WEBHOOK_IDEMPOTENCY_METADATA = 'payment-gateway:webhook-idempotency';

/** Key of what the webhook guards learned, kept on the request; a symbol so it never collides with the host's own fields. */
export const PAYMENT_WEBHOOK_REQUEST_STATE: unique symbol = Symbol.for('nestjs-payment-gateway.webhook-request');

/** Set on a webhook request whose body Fastify's parser refused, so the route's answer is given to it. */
export const PAYMENT_WEBHOOK_PARSER_REFUSED: unique symbol = Symbol('nestjs-payment-gateway:parser-refused');

/** Prefix of every event name this module emits on EventEmitter2, so it never collides with the host's own events. */
export const PAYMENT_EVENT_NAMESPACE = 'payment-gateway';

/**
 * Name of the EventEmitter2 event emitted (with a `PaymentDeadLetter`) when an event used
 * its last attempt and became a dead letter, in the worker process that ran that attempt.
 * @publicApi
 */
export const PAYMENT_DEAD_LETTER_EVENT = `${PAYMENT_EVENT_NAMESPACE}.dead-letter`;
