import { type DynamicModule, Inject, Logger, Module, Optional } from '@nestjs/common';
import {
  ConfigurablePaymentModule,
  PaymentModuleBase,
  type PaymentModuleAsyncOptions,
  type PaymentModuleRootOptions,
  type PaymentOptionsFactory,
} from './payment.module-definition.js';
import { paymentAccountNameProblems, resolvePaymentAccountName } from './accounts/payment-account.name.js';
import { getPaymentGatewayToken, getPaymentOptionsToken, getWebhookEventStoreToken } from './accounts/payment-account.tokens.js';
import { isRecord } from './common/is-record.util.js';
import { PaymentConfigurationError } from './config/payment-configuration.errors.js';
import { asyncOptionKeyProblems, moduleExtrasProblems, plainAsyncOptions, plainRootOptions } from './config/payment-option-keys.validation.js';
import { DEFAULT_PAYMENT_ACCOUNT, PAYMENT_ACCOUNT_MODULE } from './payment.constants.js';
import { PaymentMessages } from './payment.messages.js';

/**
 * Entry point of the package. `PaymentModule.forRoot()` registers one merchant account:
 * its `PaymentGatewayService`, its webhook route and its event store. It reads `PAYMENT_*`
 * variables (through the host's ConfigService when there is one), and brings no
 * ConfigModule or EventEmitterModule of its own: the host's stand.
 * @publicApi
 */
@Module({})
export class PaymentModule extends PaymentModuleBase {
  /**
   * `account` is there in a `forRoot()` / `forRootAsync()` module only (never exported, so
   * never visible to another module): without it this is a bare `imports: [PaymentModule]`,
   * which provides nothing, so no route, no client and handlers that never run. A plain value,
   * not the options: Nest builds an optional dependency that fails (a rejecting factory) as
   * `undefined`, and the real error would come after a warning to remove the import.
   */
  constructor(@Optional() @Inject(PAYMENT_ACCOUNT_MODULE) account?: string) {
    super();
    if (account === undefined) new Logger('PaymentModule').warn(PaymentMessages.bareModuleImport());
  }

  static forRoot(options: PaymentModuleRootOptions = {}): DynamicModule {
    // null as "no options", like undefined (the builder would fail on it with a bare TypeError)
    const given = plainRootOptions(options ?? {});
    throwOnExtrasProblems([...moduleExtrasProblems(given), ...paymentAccountNameProblems(given.account, 'PaymentModule.forRoot()')], given.account);
    return ConfigurablePaymentModule.forRoot.call(this, given);
  }

  static forRootAsync(asyncOptions: PaymentModuleAsyncOptions): DynamicModule {
    if (!asyncOptions?.useFactory && !asyncOptions?.useClass && !asyncOptions?.useExisting) {
      throw new TypeError(PaymentMessages.asyncOptionsMissingFactory());
    }
    // read as given (a class's getters too), as forRoot() does: the builder would drop an `account` getter
    const options = plainAsyncOptions(asyncOptions);
    // Nest's builder would keep one and drop the others without a word
    const sources = (['useFactory', 'useClass', 'useExisting'] as const).filter((key) => options[key] !== undefined);
    throwOnExtrasProblems(
      [
        ...(sources.length > 1 ? [`forRootAsync() takes one of useFactory, useClass or useExisting, not ${sources.join(' and ')}`] : []),
        // what the builder would drop silently: an option beside the factory, a misspelt extra
        ...asyncOptionKeyProblems(asyncOptions),
        ...moduleExtrasProblems(options),
        ...paymentAccountNameProblems(options.account, 'PaymentModule.forRootAsync()'),
      ],
      options.account,
    );
    const account = resolvePaymentAccountName(options.account, 'PaymentModule.forRootAsync()');
    throwOnOwnTokensInjected(options.inject, account);
    const { useClass, useExisting, ...rest } = options;
    const factoryToken = useClass ?? useExisting;
    if (factoryToken === undefined) return ConfigurablePaymentModule.forRootAsync.call(this, options);
    // The factory's method is checked on the instance, at boot: an abstract class as the token, or
    // a method defined as an arrow field, has nothing on its prototype yet is a proper factory.
    const how = useClass ? 'useClass' : 'useExisting';
    const name = typeof factoryToken === 'function' ? factoryToken.name || 'the class' : String(factoryToken);
    return ConfigurablePaymentModule.forRootAsync.call(this, {
      ...rest,
      inject: [factoryToken],
      provideInjectionTokensFrom: useClass ? [{ provide: useClass, useClass }] : undefined,
      useFactory: (factory: Partial<PaymentOptionsFactory> | undefined) => {
        if (typeof factory?.createPaymentOptions !== 'function') {
          throw new PaymentConfigurationError([`${name} given as ${how} has no createPaymentOptions() method (implement PaymentOptionsFactory)`], account);
        }
        return factory.createPaymentOptions();
      },
    });
  }
}

function throwOnExtrasProblems(problems: string[], account: unknown): void {
  // no account named: the default account's; an account that is no string names none (it is refused later)
  if (problems.length > 0) throw new PaymentConfigurationError(problems, account === undefined ? DEFAULT_PAYMENT_ACCOUNT : typeof account === 'string' ? account : undefined);
}

/**
 * An `inject` holding the account's own public token: the module provides that token itself, so
 * the factory would wait for what is built from its result. Nest cannot describe that cycle (it
 * fails with "Cannot convert a Symbol value to a string" for the store's symbol).
 */
function throwOnOwnTokensInjected(inject: PaymentModuleAsyncOptions['inject'], account: string): void {
  const injected = new Set((inject ?? []).map((entry) => (isRecord(entry) && 'token' in entry ? entry.token : entry)));
  const builtFrom = 'inject what it is built from instead';
  const ownTokens = [
    {
      token: getWebhookEventStoreToken(account),
      holds: 'webhook event store',
      fix: "provide your store under a token of your own ({ provide: 'APP_WEBHOOK_STORE', useFactory: ... }), inject that and return it as 'store'",
    },
    { token: getPaymentGatewayToken(account), holds: 'PaymentGatewayService', fix: builtFrom },
    { token: getPaymentOptionsToken(account), holds: 'resolved options', fix: builtFrom },
  ];
  const problems = ownTokens
    .filter(({ token }) => injected.has(token))
    .map(({ token, holds, fix }) => {
      const name = typeof token === 'function' ? token.name : typeof token === 'symbol' ? token.description : `'${token}'`;
      return `forRootAsync() inject lists ${name}, the token under which this module provides the account's ${holds}, built from what the factory returns (a cycle): ${fix}`;
    });
  if (problems.length > 0) throw new PaymentConfigurationError(problems, account);
}
