import { inspect, type InspectOptions } from 'node:util';
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import { paymentEnvNames } from '../config/payment-env.js';
import { type UnreadPaymentVariable, unreadPaymentVariables } from '../config/payment-env-typos.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import type { PaymentEventDispatcher } from '../events/payment-event.dispatcher.js';
import type { PaymentHealthProbe } from '../health/payment-health.interface.js';
import type { PaymentEventQueue } from '../queue/payment-event-queue.js';
import type { WebhookEventStore } from '../stores/webhook-event-store.interface.js';
import type { PaymentWebhookProcessor } from '../webhooks/payment-webhook.processor.js';

/** One account as the rest of the app sees it. */
export interface RegisteredPaymentAccount {
  readonly name: string;
  readonly options: ResolvedPaymentOptions;
  /** Verifies, deduplicates and dispatches this account's deliveries. */
  webhooks?: PaymentWebhookProcessor;
  /** Runs this account's handlers for a verified event. */
  dispatcher?: PaymentEventDispatcher;
  /** Where this account's deliveries are claimed (the building blocks on a host route claim there too). */
  store?: WebhookEventStore;
  /** Path of the module's own route, when it registered one, and its version metadata. */
  webhookPath?: string;
  webhookVersion?: string;
  /** Where the router serves that route (`registerServedWebhookRoute`), once the app is initialised. */
  servedWebhookRoute?: ServedWebhookRoute;
  /** Producer side of the account's event queue, in queue mode (dead letters live there). */
  queue?: PaymentEventQueue;
  /** What `PaymentHealthIndicator` checks for this account, in registration order. */
  readonly probes: PaymentHealthProbe[];
}

/** Where the router serves an account's route: its URL paths, and the versions it takes there (`undefined`: any request). */
export interface ServedWebhookRoute {
  paths: readonly string[];
  versions?: readonly string[];
}

/** The Nest hooks an account's providers implement. */
export interface PaymentAccountPart {
  onModuleInit?(): void;
  onApplicationBootstrap?(): void;
  onModuleDestroy?(): Promise<void>;
  onApplicationShutdown?(): Promise<void> | void;
}

/**
 * Every account registered by a `PaymentModule.forRoot()` in the app, filled while the
 * providers are created (before any `onModuleInit`). Refuses, at boot, a second account of
 * the same name, two names that would read the same `PAYMENT_<ACCOUNT>_*` variables, and
 * two accounts on one webhook path.
 */
@Injectable()
export class PaymentAccountRegistry implements OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown {
  private readonly accounts = new Map<string, RegisteredPaymentAccount>();
  /** When each step of shutdown began, at the first account to reach it. */
  private readonly shutdownStepStarts = new Map<'destroy' | 'shutdown', number>();
  private clientDrain: Promise<void> | undefined;
  /** Past bootstrap, Nest's router has read the controllers: a route added now would never be served. */
  #started = false;
  /** Parts of accounts registered after bootstrap, whose stop hooks Nest will not run. */
  private readonly lateParts: PaymentAccountPart[] = [];
  /** Variables the start-up check said no account reads: an account loaded later may read some. */
  private unreadAtStart: UnreadPaymentVariable[] = [];

  onApplicationBootstrap(): void {
    this.#started = true;
    // every account loaded at start is registered by now: a PAYMENT_* variable none of them reads is likely a typo
    this.unreadAtStart = unreadPaymentVariables(Object.keys(process.env), this.names());
    for (const { message } of this.unreadAtStart) new Logger('PaymentModule').warn(message);
  }

  /** The late accounts' (see `adoptLateHooks`). */
  async onModuleDestroy(): Promise<void> {
    for (const part of this.lateParts) await part.onModuleDestroy?.();
  }

  /** After every account's (Nest runs this shared module's hooks last): a `close()` tried again starts its steps anew. */
  async onApplicationShutdown(): Promise<void> {
    for (const part of this.lateParts) await part.onApplicationShutdown?.();
    this.shutdownStepStarts.clear();
    this.clientDrain = undefined;
  }

  /**
   * `LazyModuleLoader` runs no lifecycle hook of the modules it loads, and `close()` only those of
   * the modules there were at bootstrap: an account loaded late would never start its queue worker
   * (every event acknowledged `queued` and never run) nor close its Redis connections. Its parts'
   * start hooks run now, and their stop hooks with this registry's, one after another.
   * `parts` in stop order, each before what it uses (the processor before the store it records
   * completions in); started in the reverse order.
   */
  adoptLateHooks(parts: ReadonlyArray<PaymentAccountPart | null>): void {
    const given = parts.filter((part): part is PaymentAccountPart => part !== null);
    for (const part of [...given].reverse()) part.onModuleInit?.();
    for (const part of [...given].reverse()) part.onApplicationBootstrap?.();
    this.lateParts.push(...given);
  }

  /**
   * The start of a shutdown step for every account (Nest runs the accounts' hooks one after
   * another): each account waits for its deliveries until this plus its time-out, so two accounts
   * take one `webhookShutdownTimeoutMs` per step, not two (past a Kubernetes grace period).
   */
  shutdownStepStart(step: 'destroy' | 'shutdown'): number {
    let start = this.shutdownStepStarts.get(step);
    if (start === undefined) this.shutdownStepStarts.set(step, (start = Date.now()));
    return start;
  }

  /**
   * Shutdown's drain of the accounts' clients (see `PaymentWebhookProcessor.drainForShutdown`):
   * run once, for every account's processor together, by the first account that reaches it; the
   * others await the same run (Nest runs the accounts' hooks one after another).
   */
  drainClientsForShutdown(): Promise<void> {
    this.clientDrain ??= Promise.all([...this.accounts.values()].map((account) => account.webhooks?.drainForShutdown())).then(() => undefined);
    return this.clientDrain;
  }

  /** Whether the app has bootstrapped (an account registered now is in a lazily loaded module). */
  get started(): boolean {
    return this.#started;
  }

  register(options: ResolvedPaymentOptions): RegisteredPaymentAccount {
    const name = options.account;
    if (this.accounts.has(name)) {
      throw new PaymentConfigurationError(
        [`account '${name}' is registered twice: give each PaymentModule.forRoot() its own account name`],
        name,
      );
    }
    // the same prefix, or one account's variable being another's (accounts 'eu' and 'eu-queue'
    // would both read PAYMENT_EU_QUEUE_REDIS_URL)
    const mine = new Set(paymentEnvNames(name));
    for (const other of this.accounts.keys()) {
      const shared = paymentEnvNames(other).filter((variable) => mine.has(variable));
      if (shared.length > 0) {
        throw new PaymentConfigurationError(
          [`accounts '${other}' and '${name}' would both read ${shared.slice(0, 3).join(', ')}${shared.length > 3 ? ', ...' : ''}: rename one of them`],
          name,
        );
      }
    }
    this.warnIfSecretShared(name, options.webhookSecrets);
    if (this.#started) this.withdrawStartWarnings(mine, name);
    const account: RegisteredPaymentAccount = { name, options, probes: [] };
    this.accounts.set(name, account);
    return account;
  }

  /** An account loaded after start reads variables the start-up check called unread: said so, lest someone rename them. */
  private withdrawStartWarnings(variables: ReadonlySet<string>, name: string): void {
    const read = this.unreadAtStart.filter(({ variable }) => variables.has(variable)).map(({ variable }) => variable);
    if (read.length === 0) return;
    this.unreadAtStart = this.unreadAtStart.filter(({ variable }) => !variables.has(variable));
    new Logger('PaymentModule').log(`Account '${name}', loaded after start, reads ${read.join(', ')}: the start-up warning about ${read.length === 1 ? 'it' : 'them'} no longer applies`);
  }

  /**
   * Two accounts that accept one secret take each other's deliveries: one signed for an account
   * passes the other's route and runs that account's handlers. Said, not refused: only the host
   * knows whether the two are one merchant on purpose.
   */
  private warnIfSecretShared(name: string, secrets: readonly string[]): void {
    for (const other of this.accounts.values()) {
      if (!other.options.webhookSecrets.some((secret) => secrets.includes(secret))) continue;
      new Logger('PaymentWebhooks').warn(
        `Accounts '${other.name}' and '${name}' accept the same webhook secret: a delivery signed for one passes the other's route ` +
          "too and runs that account's handlers. Give each account the secret the service issued for it",
      );
    }
  }

  /**
   * Records the module route of `name` (`version`: its version metadata, as text); two accounts on
   * one path with the same version stop the boot here. Compared without case: Express matches
   * routes that way, so `payments/EU/webhook` would take the deliveries of `payments/eu/webhook`.
   * Routes that differ only by version, or whose paths meet only under the app's versioning and
   * prefix, are compared once those are known (`registerServedWebhookRoute`).
   */
  registerWebhookPath(name: string, path: string, version?: string): void {
    for (const other of this.accounts.values()) {
      if (other.name !== name && other.webhookPath?.toLowerCase() === path.toLowerCase() && other.webhookVersion === version) {
        throw samePathError(other.name, name, `/${path}`);
      }
    }
    const account = this.require(name);
    account.webhookPath = path;
    account.webhookVersion = version;
  }

  /**
   * Records where the router serves the route of `name` (at init, when the app's global prefix and
   * versioning are set); one another account's route shares stops the boot: a URI version (`v1/hooks`
   * beside `hooks` with `Version('1')`) or a prefix can make two paths one, and the first route
   * mapped would take both accounts' deliveries, answering the other's 401.
   */
  registerServedWebhookRoute(name: string, route: ServedWebhookRoute): void {
    const lower = new Set(route.paths.map((path) => path.toLowerCase()));
    for (const other of this.accounts.values()) {
      const theirs = other.servedWebhookRoute;
      if (other.name === name || theirs === undefined) continue;
      const shared = theirs.paths.find((path) => lower.has(path.toLowerCase()));
      const sameVersion = route.versions === undefined || theirs.versions === undefined || route.versions.some((v) => theirs.versions!.includes(v));
      if (shared !== undefined && sameVersion) throw samePathError(other.name, name, shared);
    }
    this.require(name).servedWebhookRoute = route;
  }

  attachWebhooks(name: string, webhooks: PaymentWebhookProcessor, dispatcher: PaymentEventDispatcher, store: WebhookEventStore): void {
    const account = this.require(name);
    account.webhooks = webhooks;
    account.dispatcher = dispatcher;
    account.store = store;
  }

  /** Adds a health check of the account (the store's and the credentials' at boot; a feature may add its own). */
  attachProbe(name: string, probe: PaymentHealthProbe): void {
    this.require(name).probes.push(probe);
  }

  attachQueue(name: string, queue: PaymentEventQueue): void {
    this.require(name).queue = queue;
  }

  /** The account's event queue, or a configuration error naming the accounts that have one. */
  requireQueue(name: string): PaymentEventQueue {
    const account = this.accounts.get(name);
    if (account?.queue !== undefined) return account.queue;
    const queueAccounts = `queue-mode accounts: ${this.queueAccountNames().join(', ') || 'none'}`;
    if (account === undefined) {
      // not a configuration of that account: there is none (a typo, an admin route's argument)
      throw new PaymentConfigurationError([`no account '${name}' is registered by PaymentModule.forRoot() (${queueAccounts})`]);
    }
    throw new PaymentConfigurationError(
      [`account '${name}' has no event queue: dead letters exist only for accounts with processing: 'queue' (${queueAccounts})`],
      name,
    );
  }

  /** The accounts with `processing: 'queue'` (those that have dead letters). */
  queueAccountNames(): string[] {
    return [...this.accounts.values()].filter((a) => a.queue !== undefined).map((a) => a.name);
  }

  /** The account, or `undefined` for a name nobody registered. */
  registered(name: string): RegisteredPaymentAccount | undefined {
    return this.accounts.get(name);
  }

  has(name: string): boolean {
    return this.accounts.has(name);
  }

  names(): string[] {
    return [...this.accounts.keys()];
  }

  /** The account, or a configuration error naming the registered ones. */
  require(name: string): RegisteredPaymentAccount {
    const account = this.accounts.get(name);
    if (account === undefined) {
      throw new PaymentConfigurationError([
        `no PaymentModule.forRoot() registers account '${name}' (registered: ${this.names().join(', ') || 'none'})`,
      ]);
    }
    return account;
  }

  /**
   * The account names only: the accounts hold the dispatchers, whose `ModuleRef` reaches the
   * Nest container and the raw `forRoot()` options in it (secrets included), and the host's
   * handler instances; every public service that holds this registry prints through here.
   */
  toJSON(): Record<string, unknown> {
    return { accounts: [...this.accounts.keys()] };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentAccountRegistry', this.toJSON(), depth, options);
  }
}

function samePathError(first: string, second: string, path: string): PaymentConfigurationError {
  return new PaymentConfigurationError([`accounts '${first}' and '${second}' both receive webhooks on '${path}': give each its own webhookPath`], second);
}
