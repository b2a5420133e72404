import {
  type ConfigurableModuleAsyncOptions,
  ConfigurableModuleBuilder,
  type ConfigurableModuleCls,
  type ConfigurableModuleOptionsFactory,
  type ModuleMetadata,
  type Provider,
} from '@nestjs/common';
import { resolvePaymentAccountName } from './accounts/payment-account.name.js';
import type { PaymentModuleOptions } from './config/payment-module-options.interface.js';
import { withRedactedModuleOptions } from './config/payment-options.redaction.js';
import { createPaymentAccountProviders } from './payment-account.providers.js';
import { PaymentCoreModule } from './payment-core.module.js';
import { PAYMENT_MODULE_OPTIONS } from './payment.constants.js';

/**
 * Options of `forRoot()` / `forRootAsync()` that shape the module itself rather than the
 * account's settings; on `forRootAsync()` they sit beside `useFactory`, not inside it,
 * because they are needed before any provider exists.
 * @publicApi
 */
export interface PaymentModuleExtras {
  /** Register the module globally, so feature modules can inject its providers without importing it. @default false */
  isGlobal?: boolean | undefined;
  /**
   * Name of the merchant account this module registers. Omitted: the default account
   * (`PAYMENT_*` variables, injected as `PaymentGatewayService`). Named: `PAYMENT_<NAME>_*`
   * variables, injected with `@InjectPaymentGateway(name)`.
   */
  account?: string | undefined;
  /**
   * Decorators applied to the module's webhook route handler, in the order given (as Nest's
   * `applyDecorators` does); e.g. `[Public(), SkipThrottle()]` so the host's global guards let
   * the service through.
   */
  webhookDecorators?: MethodDecorator[] | undefined;
  /**
   * Decorators applied to the module's webhook controller class, in the order given, after
   * `webhookDecorators`: for host guards that read metadata from the class only
   * (`reflector.get(KEY, context.getClass())`) and for class-only decorators such as
   * `ApiExcludeController()`. Each `forRoot()` has its own controller class, so they never
   * reach another account's route. @default []
   */
  webhookClassDecorators?: ClassDecorator[] | undefined;
  /**
   * Modules whose exported providers the guards, interceptors or filters named in
   * `webhookDecorators` or `webhookClassDecorators` inject (they are built in this module, e.g. `UseGuards(ApiKeyGuard)`
   * needing your `AuthModule`'s `AuthService`). Global modules need not be listed. @default []
   */
  webhookImports?: NonNullable<ModuleMetadata['imports']> | undefined;
  /**
   * `false`: register no route; receive webhooks in your own controller with
   * `PaymentWebhookReceiver`. @default true
   */
  webhookRoute?: boolean | undefined;
  /** Whether `PAYMENT_*` variables fill what the options leave out. @default true */
  readEnv?: boolean | undefined;
}

/** The factory class of `forRootAsync({ useClass })`. @publicApi */
export type PaymentOptionsFactory = ConfigurableModuleOptionsFactory<PaymentModuleOptions, 'createPaymentOptions'>;

const built = new ConfigurableModuleBuilder<PaymentModuleOptions>({ optionsInjectionToken: PAYMENT_MODULE_OPTIONS })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createPaymentOptions')
  .setExtras<PaymentModuleExtras>(
    { isGlobal: false, account: undefined, webhookDecorators: [], webhookClassDecorators: [], webhookImports: [], webhookRoute: true, readEnv: true },
    (definition, extras) => {
      const account = createPaymentAccountProviders(resolvePaymentAccountName(extras.account), extras);
      return {
        ...definition,
        global: extras.isGlobal,
        imports: [...(definition.imports ?? []), ...(extras.webhookImports ?? []), PaymentCoreModule],
        controllers: account.controllers,
        providers: [...(definition.providers ?? []).map(redactingModuleOptions), ...account.providers],
        exports: [PaymentCoreModule, ...account.exports],
      };
    },
  )
  .build();

// Typed by hand: an inferred type of ESM-only Nest 12 is written into the CommonJS typings as
// `import("@nestjs/common", { with: { "resolution-mode": "import" } })`, which TypeScript < 5.3
// cannot parse (a syntax error in our .d.ts that skipLibCheck does not hide).
export const ConfigurablePaymentModule: ConfigurableModuleCls<PaymentModuleOptions, 'forRoot', 'createPaymentOptions', PaymentModuleExtras> =
  built.ConfigurableModuleClass;

/**
 * The builder's class, typed without its static methods: `PaymentModule` declares its own
 * `forRoot` and `forRootAsync` (calling the builder's), the latter with a narrower parameter
 * than Nest's, which a subclass of the builder's static type could not have.
 */
export const PaymentModuleBase: new () => object = ConfigurablePaymentModule;

/** What `PaymentModule.forRoot()` takes: the account's settings plus the module extras. @publicApi */
export type PaymentModuleRootOptions = PaymentModuleOptions & Partial<PaymentModuleExtras>;
/** Nest's async options for this module, with the extras: what `forRootAsync()` is built from. */
type PaymentModuleAsyncOptionsOfNest = ConfigurableModuleAsyncOptions<PaymentModuleOptions, 'createPaymentOptions'> & Partial<PaymentModuleExtras>;
/** Nest's async options without their sources: `imports`, `provideInjectionTokensFrom` and the extras. */
type AsyncOptionsBase = Omit<PaymentModuleAsyncOptionsOfNest, 'useFactory' | 'useClass' | 'useExisting' | 'inject'>;
type AsyncSource = Pick<PaymentModuleAsyncOptionsOfNest, 'useFactory' | 'useClass' | 'useExisting' | 'inject'>;

/**
 * What `PaymentModule.forRootAsync()` takes: exactly one of `useFactory` (with its `inject`),
 * `useClass` or `useExisting`, beside the module extras. Nest's own type allows none or several,
 * which `forRootAsync()` would only refuse when called; `inject` beside `useClass` Nest ignores.
 * @publicApi
 */
export type PaymentModuleAsyncOptions = AsyncOptionsBase &
  (
    | { useFactory: NonNullable<AsyncSource['useFactory']>; inject?: AsyncSource['inject']; useClass?: never; useExisting?: never }
    | { useClass: NonNullable<AsyncSource['useClass']>; useFactory?: never; useExisting?: never; inject?: never }
    | { useExisting: NonNullable<AsyncSource['useExisting']>; useFactory?: never; useClass?: never; inject?: never }
  );

/** The provider of the raw options, made to hand out their redacted copy (see `withRedactedModuleOptions`). */
function redactingModuleOptions(provider: Provider): Provider {
  if (typeof provider !== 'object' || provider.provide !== PAYMENT_MODULE_OPTIONS) return provider;
  if ('useValue' in provider) return { ...provider, useValue: withRedactedModuleOptions(provider.useValue) };
  if ('useFactory' in provider) {
    const factory = provider.useFactory;
    return { ...provider, useFactory: async (...args: unknown[]) => withRedactedModuleOptions(await factory(...args)) };
  }
  return provider;
}
