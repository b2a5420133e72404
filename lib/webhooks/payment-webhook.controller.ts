import {
  Controller,
  HttpCode,
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnModuleInit,
  type Provider,
  Req,
  RequestMethod,
  type Type,
  Version,
  VERSION_NEUTRAL,
  VersioningType,
} from '@nestjs/common';
import { METHOD_METADATA, MODULE_PATH, PATH_METADATA, VERSION_METADATA } from '@nestjs/common/constants.js';
import { ApplicationConfig, HttpAdapterHost, ModulesContainer } from '@nestjs/core';
import { PaymentAccountRegistry } from '../accounts/payment-account.registry.js';
import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { DEFAULT_PAYMENT_ACCOUNT, PAYMENT_ACCOUNT_OPTIONS, PAYMENT_WEBHOOK_ROUTE } from '../payment.constants.js';
import { installWebhookBodyErrorHandler, markWebhookRoute } from './webhook-body-parser-refusals.js';
import { type WebhookRouteVersion, webhookRoutePaths } from './webhook-route-paths.js';
import { type PaymentWebhookAck, PaymentWebhookProcessor } from './payment-webhook.processor.js';
import type { PaymentWebhookRequest } from './payment-webhook.request.js';

/** Where an account's webhook route was registered. */
export interface PaymentWebhookRoute {
  /** Path without leading slash, relative to any global prefix; `undefined` when there is no route. */
  path?: string;
  /** The route's version metadata (`VERSION_NEUTRAL` unless `webhookDecorators` set one). */
  version?: WebhookRouteVersion;
}

/** What no path means in messages. */
const NO_ROUTE = 'no route (no webhook secret)';

/**
 * The module's webhook controller for ONE account, and the providers that place its route.
 * Each call makes a new class, so route metadata and the host's `webhookDecorators` given
 * to one `forRoot()` never leak into another. The handler has no guard, interceptor or
 * filter of its own: it hands the request to the account's `PaymentWebhookProcessor`, and
 * only the host's global enhancers (made to let it through with `webhookDecorators`) run.
 *
 * The route is decided at DI time: the options (env included) are only known when the
 * account's options factory ran, and provider factories run before Nest's router reads
 * controller metadata. So the POST handler is declared without route metadata, and a
 * provider adds PATH/METHOD to it only when a webhook secret is configured; without one
 * the controller has no route at all (404).
 */
export function createPaymentWebhookRoute(
  decorators: readonly MethodDecorator[] = [],
  classDecorators: readonly ClassDecorator[] = [],
  account?: string,
): {
  controller: Type<unknown>;
  providers: Provider[];
} {
  @Controller()
  class PaymentWebhookController {
    constructor(@Inject(PaymentWebhookProcessor) private readonly webhooks: PaymentWebhookProcessor) {}

    @HttpCode(200)
    // The service sends no version: with the host's versioning on (a default version, a version
    // header or media type) the route would be 404 or move under /v1. `webhookDecorators` can set one.
    @Version(VERSION_NEUTRAL)
    receive(@Req() request: PaymentWebhookRequest): Promise<PaymentWebhookAck> {
      return this.webhooks.process(request);
    }
  }
  // Host enhancers key on the class's name (@nestjs/throttler's buckets: class name + method name):
  // one name per account, or every account's route would share one bucket
  if (account !== undefined && account !== DEFAULT_PAYMENT_ACCOUNT) {
    Object.defineProperty(PaymentWebhookController, 'name', { value: `PaymentWebhookController_${account}` });
  }
  if (decorators.length > 0) applyRouteDecorators(PaymentWebhookController.prototype, decorators, account);
  // after the method's, as TypeScript orders them; for hosts whose guards read the class
  // (`reflector.get(KEY, context.getClass())`) and for class-only decorators
  let controller: Type<unknown> = PaymentWebhookController;
  if (classDecorators.length > 0) {
    const handler = PaymentWebhookController.prototype.receive;
    for (const [index, decorate] of classDecorators.entries()) {
      const returned: unknown = decorate(controller);
      if (returned === undefined) continue;
      // a class decorator returns the class, or one built over it; another function is a factory's decorator
      const prototype: unknown = typeof returned === 'function' ? returned.prototype : undefined;
      if (prototype !== controller.prototype && !(typeof prototype === 'object' && controller.prototype.isPrototypeOf(prototype))) {
        throw uncalledFactory('webhookClassDecorators', index, account);
      }
      controller = returned as Type<unknown>;
    }
    // one that wraps the class's methods (or returns a subclass overriding `receive`) must not
    // drop the route's status, version and the `webhookDecorators` guards with them
    const wrapper: unknown = (controller.prototype as PaymentWebhookController).receive;
    if (typeof wrapper === 'function' && wrapper !== handler) copyMissingMetadata(handler, wrapper);
  }

  // The route lives on the class, so applications built from one forRoot() result share it:
  // the one whose providers ran last decides it for all. Said once, where it differs.
  const placed = new Set<PaymentWebhookRoute>();
  const warnIfShared = (route: PaymentWebhookRoute, account: string): void => {
    const other = [...placed].find((p) => p.path !== route.path);
    if (other === undefined) return;
    new Logger('PaymentWebhooks').warn(
      `One PaymentModule.forRoot() result (account ${account}) is used by two live applications with different webhook routes ` +
        `('${other.path ?? NO_ROUTE}' and '${route.path ?? NO_ROUTE}'): an application that has not started yet serves the latter (one that ` +
        'had started keeps the route it mapped). Call PaymentModule.forRoot() once per application.',
    );
  };
  const routeProvider: Provider = {
    provide: PAYMENT_WEBHOOK_ROUTE,
    inject: [PAYMENT_ACCOUNT_OPTIONS, PaymentAccountRegistry],
    useFactory: (options: ResolvedPaymentOptions, accounts: PaymentAccountRegistry): PaymentWebhookRoute & OnApplicationShutdown => {
      const route = placeRoute(options, accounts);
      warnIfShared(route, options.account);
      const placement = { ...route, onApplicationShutdown: () => void placed.delete(placement) };
      placed.add(placement);
      return placement;
    },
  };
  /** Adds PATH/METHOD to the handler when the account has a webhook secret; removes them when not. */
  const placeRoute = (options: ResolvedPaymentOptions, accounts: PaymentAccountRegistry): PaymentWebhookRoute => {
    const handler = (controller.prototype as PaymentWebhookController).receive;
    if (options.webhookSecrets.length === 0) {
      // another app built from the same forRoot() result may have placed the route
      Reflect.deleteMetadata(PATH_METADATA, handler);
      Reflect.deleteMetadata(METHOD_METADATA, handler);
      return {};
    }
    const path = options.webhookPath; // already without leading/trailing slashes
    if (accounts.started) {
      // LazyModuleLoader: Nest's router is built, the route would silently answer 404 and every delivery be lost
      throw new PaymentConfigurationError(
        [
          `the module was loaded after the app started (LazyModuleLoader), so its webhook route '/${path}' cannot be added: ` +
            'import PaymentModule statically, or set webhookRoute: false and receive webhooks with PaymentWebhookReceiver in a controller of yours',
        ],
        options.account,
      );
    }
    const version: WebhookRouteVersion | undefined = Reflect.getMetadata(VERSION_METADATA, handler) ?? Reflect.getMetadata(VERSION_METADATA, controller);
    accounts.registerWebhookPath(options.account, path, versionTexts(version)?.join(','));
    Reflect.defineMetadata(PATH_METADATA, path, handler);
    Reflect.defineMetadata(METHOD_METADATA, RequestMethod.POST, handler);
    markWebhookRoute(handler, options.account);
    return { path, version };
  };

  return { controller, providers: [routeProvider, PaymentWebhookBodyErrorsInstaller] };
}

/**
 * Body parsing runs before Nest's routing, so its errors (broken JSON, body over the
 * parser's limit) would skip the route; this gives them the route's `{ statusCode, code,
 * message }` body on its path only.
 */
@Injectable()
class PaymentWebhookBodyErrorsInstaller implements OnModuleInit {
  constructor(
    @Inject(PAYMENT_WEBHOOK_ROUTE) private readonly route: PaymentWebhookRoute,
    private readonly adapterHost: HttpAdapterHost,
    private readonly appConfig: ApplicationConfig,
    @Inject(PaymentWebhookProcessor) private readonly webhooks: PaymentWebhookProcessor,
    private readonly modules: ModulesContainer,
    @Inject(PAYMENT_ACCOUNT_OPTIONS) private readonly options: ResolvedPaymentOptions,
    private readonly accounts: PaymentAccountRegistry,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    const { version } = this.route;
    if (this.route.path !== undefined && adapter) {
      const config = this.appConfig;
      const modulePath = this.routerModulePath();
      const path = modulePath === '' ? this.route.path : `${modulePath}/${this.route.path}`;
      // Nest mapped the routes before any onModuleInit: the prefix and versioning it used are set
      const versioning = config.getVersioning();
      const paths = webhookRoutePaths(path, version, { globalPrefix: config.getGlobalPrefix(), exclude: config.getGlobalPrefixOptions().exclude, versioning });
      this.accounts.registerServedWebhookRoute(this.options.account, {
        paths,
        // a URI version is in the paths; header, media type and custom versioning tell routes of one path apart
        versions: versioning === undefined || versioning.type === VersioningType.URI ? undefined : versionTexts(version),
      });
      installWebhookBodyErrorHandler(adapter, { account: this.options.account, paths, version, versioning }, {
        onRefused: (request, answer) => this.webhooks.refusedByBodyParser(request, answer),
        routeRefusal: (request) => this.webhooks.verificationRefusal(request),
      });
    }
  }

  /**
   * The path a host's `RouterModule.register([{ path, module: PaymentModule }])` puts the route
   * under (children's paths joined, as Nest's router reads it), without slashes; '' when none.
   * Set by then: RouterModule writes it when it is built, before any module is initialised.
   */
  private routerModulePath(): string {
    const own = [...this.modules.values()].find((module) => module.providers.get(PAYMENT_WEBHOOK_ROUTE)?.instance === this.route);
    if (own === undefined) return '';
    const path: unknown = Reflect.getMetadata(MODULE_PATH + this.modules.applicationId, own.metatype) ?? Reflect.getMetadata(MODULE_PATH, own.metatype);
    return typeof path === 'string' ? path.replace(/^\/+|\/+$/g, '') : '';
  }
}

/**
 * Applies `decorators` to the route method in the order given, as Nest's `applyDecorators`
 * does (the reverse of stacking them above a method: the last given wins a metadata key and
 * is the outermost wrapper): metadata
 * readers see theirs on the handler (and through `Reflector.getAllAndOverride/getAllAndMerge`),
 * guards and interceptors apply to the route, and a decorator that wraps the method (tracing,
 * auditing) has its wrapper called. A wrapper gets the metadata of the method it replaced.
 */
function applyRouteDecorators(prototype: object, decorators: readonly MethodDecorator[], account: string | undefined): void {
  const original = Object.getOwnPropertyDescriptor(prototype, 'receive')!;
  let descriptor: PropertyDescriptor = { ...original };
  for (const [index, decorate] of decorators.entries()) {
    const returned: unknown = decorate(prototype, 'receive', descriptor);
    // a method decorator returns a descriptor or nothing; a function is what a factory given uncalled returns
    if (typeof returned === 'function') throw uncalledFactory('webhookDecorators', index, account);
    if (returned !== undefined) descriptor = returned as PropertyDescriptor;
  }
  const wrapper: unknown = descriptor.value;
  if (typeof wrapper === 'function' && wrapper !== original.value) copyMissingMetadata(original.value, wrapper);
  Object.defineProperty(prototype, 'receive', descriptor);
}

/** `[Public]` for `[Public()]`: it would be dropped without a word (method) or fail the boot with a bare TypeError (class). */
function uncalledFactory(option: string, index: number, account: string | undefined): PaymentConfigurationError {
  return new PaymentConfigurationError(
    [`option '${option}'[${index}] returned a function instead of applying itself: a decorator factory given uncalled? Call it (Public(), not Public)`],
    account,
  );
}

/** Gives a wrapper the metadata of the method it replaced (what it set itself wins). */
function copyMissingMetadata(from: object, to: object): void {
  for (const key of Reflect.getOwnMetadataKeys(from)) {
    if (!Reflect.hasOwnMetadata(key, to)) Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, from), to);
  }
}

/** A route's versions as text; `undefined` for a version-neutral route (or none), which takes any request. */
function versionTexts(version: WebhookRouteVersion | undefined): string[] | undefined {
  const versions = version === undefined ? [] : [version].flat();
  if (versions.length === 0 || versions.some((v) => typeof v !== 'string')) return undefined;
  return (versions as string[]).slice().sort();
}
