import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { getPaymentEventHandlerMetadata } from './payment-event-metadata.accessor.js';
import { PaymentEventHandlerRegistry, type PaymentEventHandler } from './payment-event-handler.registry.js';
import type { AnyPaymentEvent } from './payment-event.types.js';

type HandlerHost = Record<string | symbol, unknown>;

/**
 * Finds every provider and controller method decorated with `@OnPaymentEvent`
 * in the whole application (once, at module init) and fills the registry the
 * dispatcher reads. Handlers are never registered on EventEmitter2, so each
 * runs once per event.
 */
@Injectable()
export class PaymentEventExplorer implements OnModuleInit {
  private readonly logger = new Logger('PaymentEvents');
  private readonly handlerRegistry = new PaymentEventHandlerRegistry();
  private explored = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.explore();
  }

  /** The handlers found; filled on first call. */
  get registry(): PaymentEventHandlerRegistry {
    this.explore();
    return this.handlerRegistry;
  }

  /** Scans the application once; later calls do nothing. */
  explore(): void {
    if (this.explored) return;
    this.explored = true;
    // One instance may sit behind several wrappers (e.g. the same `useValue` in two modules).
    const seen = new Set<unknown>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      this.exploreWrapper(wrapper, seen);
    }
    if (this.handlerRegistry.size > 0) {
      this.logger.log(`${this.handlerRegistry.size} @OnPaymentEvent handler(s) registered`);
    }
  }

  private exploreWrapper(wrapper: InstanceWrapper, seen: Set<unknown>): void {
    // An alias (`useExisting`) points at a provider scanned on its own.
    if (wrapper.isAlias) return;
    const instance = wrapper.instance as HandlerHost | undefined | null;
    if (!instance || typeof instance !== 'object') return;
    const prototype = Object.getPrototypeOf(instance) as object | null;
    if (!prototype || prototype === Object.prototype) return;
    // Transient wrappers hold an unconstructed prototype, like request-scoped ones: resolve those per event.
    const isStatic = wrapper.isDependencyTreeStatic() && !wrapper.isTransient;
    const identity = isStatic ? instance : wrapper;
    if (seen.has(identity)) return;
    seen.add(identity);

    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const metadata = getPaymentEventHandlerMetadata((prototype as HandlerHost)[methodName]);
      if (!metadata) continue;
      const className = (instance.constructor as { name?: string } | undefined)?.name || String(wrapper.name);
      const name = `${className}.${methodName}`;
      const invoke = isStatic
        ? (event: AnyPaymentEvent) => callHandler(instance, methodName, event)
        : this.scopedInvoker(wrapper, methodName);
      const handler: PaymentEventHandler = { name, patterns: metadata.patterns, invoke, scoped: !isStatic };
      this.handlerRegistry.add(handler);
    }
  }

  /**
   * A request-scoped, request-dependent or transient provider has no shared
   * instance: resolve one in the event's context id, from the provider's own
   * module so a class declared in two modules resolves the right one.
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
}

async function callHandler(instance: HandlerHost, methodName: string, event: AnyPaymentEvent): Promise<unknown> {
  const method = instance[methodName] as (event: AnyPaymentEvent) => unknown;
  return method.call(instance, event);
}
