import { Injectable, Logger, type OnModuleInit, Optional } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { isThenable } from '../common/as-promise.util.js';
import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import { paymentEnvName } from '../config/payment-env.js';
import type { PaymentEventHandler } from './payment-event-handler.interface.js';
import { PaymentEventHandlerRegistry } from './payment-event-handler.registry.js';
import { PaymentEventMetadataAccessor } from './payment-event-metadata.accessor.js';
import type { AnyPaymentEvent } from './payment-event.types.js';

type HandlerHost = Record<string | symbol, unknown>;

/**
 * Finds every provider and controller method decorated with `@OnPaymentEvent` in the
 * modules loaded at start-up (not in lazily loaded ones), once at module init, and fills the `PaymentEventHandlerRegistry`
 * the dispatchers read. Handlers are never registered on EventEmitter2, so each runs once
 * per event. A handler bound to an account that no `PaymentModule.forRoot()` registers
 * stops the boot.
 */
@Injectable()
export class PaymentEventExplorer implements OnModuleInit {
  private readonly logger = new Logger('PaymentEvents');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
    private readonly metadata: PaymentEventMetadataAccessor,
    private readonly registry: PaymentEventHandlerRegistry,
    @Optional() private readonly accounts?: PaymentAccountRegistry,
  ) {}

  onModuleInit(): void {
    this.explore();
  }

  /** Scans the application and fills the registry (again, from scratch, when called twice). */
  explore(): void {
    this.registry.clear();
    // One instance may sit behind several wrappers (e.g. the same `useValue` in two modules).
    const seen = new Set<unknown>();
    // where each handler class got an instance: `<token> in <module>`
    const hostsByClass = new Map<unknown, string[]>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      if (this.exploreWrapper(wrapper, seen)) {
        const type = (wrapper.instance as object).constructor;
        hostsByClass.set(type, [...(hostsByClass.get(type) ?? []), `${tokenName(wrapper.token)} in ${wrapper.host?.name ?? 'a module'}`]);
      }
    }
    this.assertBoundAccountsExist();
    this.warnClassesProvidedTwice(hostsByClass);
    if (this.registry.size > 0) {
      this.logger.log(`${this.registry.size} @OnPaymentEvent handler(s) registered`);
      this.warnAccountsWithoutSecret();
    }
    this.warnRoutesWithoutHandlers();
  }

  /**
   * An account whose route takes webhooks (and whose handlers would run in this process) without a
   * single handler for it: its events are answered 2xx and dropped, which the service never retries.
   * Most often the handlers' provider is missing from every module's `providers`.
   */
  private warnRoutesWithoutHandlers(): void {
    for (const name of this.accounts?.names() ?? []) {
      const { options, webhookPath } = this.accounts!.require(name);
      if (webhookPath === undefined || (options.processing === 'queue' && !options.queueWorker)) continue;
      if (this.registry.list().some((handler) => handler.bindings.some((b) => b.account === undefined || b.account === name))) continue;
      this.logger.warn(
        `Account '${name}' receives webhooks on /${webhookPath} but no @OnPaymentEvent handler was found for it: its events are ` +
          "answered 2xx and dropped, unless a listener on the app's EventEmitter2 hears them. Is the handlers' provider in a module's providers?",
      );
    }
  }

  /**
   * Handlers wait for an account that has no webhook secret: no delivery can be verified (the
   * module route is not even registered: 404), so the service's events never reach them.
   * Documented, but silent until the first lost event. A queue-mode instance that runs a worker
   * may be a worker process (which needs no secret, HTTP server or not: health, metrics): said at
   * `log`; a web-only one (queueWorker: false) or an inline one cannot be right: `warn`.
   */
  private warnAccountsWithoutSecret(): void {
    for (const name of this.accounts?.names() ?? []) {
      const { options } = this.accounts!.require(name);
      if (options.webhookSecrets.length > 0) continue;
      const waiting = this.registry.list().filter((handler) => handler.bindings.some((b) => b.account === undefined || b.account === name));
      if (waiting.length === 0) continue;
      const secret = paymentEnvName('webhookSecret', name);
      if (options.processing === 'queue' && options.queueWorker) {
        this.logger.log(`Account '${name}' has no webhook secret (${secret}): this instance receives no webhooks and only runs the queue's worker`);
        continue;
      }
      this.logger.warn(
        `Account '${name}' has ${waiting.length} @OnPaymentEvent handler(s) but no webhook secret (${secret}): ` +
          'no webhook can be verified, so no event reaches them (the module route is not registered: 404; a host route gets 500)',
      );
    }
  }

  /**
   * A class listed in the `providers` of two modules is two instances, and both run their
   * handlers: each event reaches the class twice. Nest allows it (event-emitter listeners
   * behave alike) and two instances may differ on purpose, so it is said, not refused.
   */
  private warnClassesProvidedTwice(hostsByClass: Map<unknown, string[]>): void {
    for (const [type, hosts] of hostsByClass) {
      if (hosts.length < 2) continue;
      const name = (type as { name?: string }).name || 'a class';
      this.logger.warn(
        `${name} has @OnPaymentEvent handlers and ${hosts.length} instances (${hosts.join('; ')}): each instance runs them, ` +
          `so every event reaches ${name} ${hosts.length} times. Register it once, under one token in one module that the others import.`,
      );
    }
  }

  /** Registers the handlers of one provider or controller; true when it had any (a new one). */
  private exploreWrapper(wrapper: InstanceWrapper, seen: Set<unknown>): boolean {
    // An alias (`useExisting`) points at a provider scanned on its own.
    if (wrapper.isAlias) return false;
    const instance = wrapper.instance as HandlerHost | undefined | null;
    if (!instance || typeof instance !== 'object') return false;
    const prototype = Object.getPrototypeOf(instance) as object | null;
    if (!prototype || prototype === Object.prototype) return false;
    // Transient wrappers hold an unconstructed prototype, like request-scoped ones: resolve those per event.
    const isStatic = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
    const identity = isStatic ? instance : wrapper;
    if (seen.has(identity)) return false;
    seen.add(identity);

    let found = false;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const metadata = this.metadata.getHandlerMetadata(prototype, methodName);
      if (!metadata) continue;
      const className = (instance.constructor as { name?: string } | undefined)?.name || String(wrapper.name);
      if (isStatic && isShadowedByField(instance, prototype, methodName)) this.warnShadowed(className, methodName);
      const invoke: PaymentEventHandler['invoke'] = isStatic
        ? (event) => callHandler(instance, methodName, event)
        : this.scopedInvoker(wrapper, methodName);
      this.registry.add({ name: `${className}.${methodName}`, bindings: metadata.bindings, invoke, scoped: !isStatic });
      found = true;
    }
    return found;
  }

  /**
   * A class field of the same name (`override on = (event) => ...`) shadows the decorated method on
   * every instance: the field runs for the event, although, as an undecorated override, it reads as
   * no handler. Said at boot; declare the override as a method with its own `@OnPaymentEvent`.
   */
  private warnShadowed(className: string, methodName: string): void {
    this.logger.warn(
      `${className}.${methodName} is an @OnPaymentEvent handler of a base class, shadowed by a property of the instance (a class field?), ` +
        `which runs for the event instead: declare it as a method (with its own @OnPaymentEvent) or give the field another name`,
    );
  }

  /**
   * A request-scoped, request-dependent or transient provider has no shared instance:
   * resolve one in the event's context id, from the provider's own module so a class
   * declared in two modules resolves the right one.
   */
  private scopedInvoker(wrapper: InstanceWrapper, methodName: string): PaymentEventHandler['invoke'] {
    const hostRef = wrapper.host?.getProviderByKey(ModuleRef)?.instance as ModuleRef | undefined;
    return async (event, context) => {
      const instance = hostRef
        ? await hostRef.resolve<unknown, HandlerHost>(wrapper.token, context.contextId, { strict: true })
        : await this.moduleRef.resolve<unknown, HandlerHost>(wrapper.token, context.contextId, { strict: false });
      return callHandler(instance, methodName, event);
    };
  }

  private assertBoundAccountsExist(): void {
    if (this.accounts === undefined) return;
    const problems: string[] = [];
    for (const handler of this.registry.list()) {
      for (const { account } of handler.bindings) {
        if (account !== undefined && !this.accounts.has(account)) {
          problems.push(
            `@OnPaymentEvent handler ${handler.name} is bound to account '${account}', ` +
              `but no PaymentModule.forRoot({ account: '${account}' }) is registered (registered: ${this.accounts.names().join(', ') || 'none'})`,
          );
        }
      }
    }
    if (problems.length > 0) throw new PaymentConfigurationError(problems);
  }
}

/**
 * Whether an own property of `instance` (a subclass's class field) stands in for the decorated
 * method: not one bound to the instance in its constructor (`this.on = this.on.bind(this)`).
 */
function isShadowedByField(instance: HandlerHost, prototype: object, methodName: string): boolean {
  if (!Object.hasOwn(instance, methodName)) return false;
  const own = instance[methodName];
  return own !== (prototype as HandlerHost)[methodName] && !(typeof own === 'function' && own.name === `bound ${methodName}`);
}

/**
 * Calls the method. An observable it returns, or resolves with (an `async` method returning
 * one, as Nest's route handlers may), becomes a promise of its end: run to completion, its
 * error a handler failure. A plain value is returned as is.
 */
function callHandler(instance: HandlerHost, methodName: string, event: AnyPaymentEvent): unknown {
  const result = (instance[methodName] as (event: AnyPaymentEvent) => unknown).call(instance, event);
  if (isObservable(result)) return untilComplete(result);
  // the decorator refuses generator methods; one a wrapper hides (an async one too) must not pass for handled
  if (isGenerator(result)) throw generatorReturned(instance, methodName);
  if (isThenable(result)) {
    return Promise.resolve(result).then((value) => {
      if (isGenerator(value)) throw generatorReturned(instance, methodName);
      return isObservable(value) ? untilComplete(value) : value;
    });
  }
  return result;
}

function generatorReturned(instance: HandlerHost, methodName: string): TypeError {
  const className = (instance.constructor as { name?: string } | undefined)?.name ?? 'handler';
  return new TypeError(`${className}.${methodName} returned a generator: its body did not run. Make the handler a plain or async method`);
}

/** What calling a generator method returns, its body not yet run (a native generator or a compiled one). */
function isGenerator(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const tag = Object.prototype.toString.call(value);
  if (tag === '[object Generator]' || tag === '[object AsyncGenerator]') return true;
  const iterator = value as { next?: unknown; throw?: unknown; [Symbol.iterator]?: unknown; [Symbol.asyncIterator]?: unknown };
  return typeof iterator.next === 'function' && typeof iterator.throw === 'function' && (Symbol.asyncIterator in iterator || Symbol.iterator in iterator);
}

function untilComplete(observable: Observable<unknown>): Promise<unknown> {
  return lastValueFrom(observable, { defaultValue: undefined });
}

/** A provider token as a person reads it: a class by its name, a string quoted, a symbol as written. */
function tokenName(token: unknown): string {
  if (typeof token === 'function') return (token as { name?: string }).name || 'a class';
  return typeof token === 'string' ? `'${token}'` : String(token);
}
