import { type DynamicModule, Module } from '@nestjs/common';
import {
  ConfigurablePaymentModule,
  type PaymentModuleAsyncOptions,
  type PaymentModuleRootOptions,
} from './payment.module-definition.js';
import { PaymentConfigurationError } from './config/payment-configuration.error.js';
import { asyncOptionKeyProblems } from './config/payment-options.validation.js';
import { PaymentMessages } from './payment.messages.js';

/**
 * Entry point of the package. `PaymentModule.forRoot()` registers one merchant account:
 * its `PaymentGatewayService`, its webhook route and its event store. It reads `PAYMENT_*`
 * variables (through the host's ConfigService when there is one), and brings no
 * ConfigModule or EventEmitterModule of its own: the host's stand.
 * @publicApi
 */
@Module({})
export class PaymentModule extends ConfigurablePaymentModule {
  static override forRoot(options: PaymentModuleRootOptions = {}): DynamicModule {
    // null as "no options", like undefined (the builder would fail on it with a bare TypeError)
    return super.forRoot(options ?? {});
  }

  static override forRootAsync(options: PaymentModuleAsyncOptions): DynamicModule {
    if (!options?.useFactory && !options?.useClass && !options?.useExisting) {
      throw new TypeError(PaymentMessages.asyncOptionsMissingFactory());
    }
    // what the builder would drop silently: an option beside the factory, a misspelt extra
    const problems = asyncOptionKeyProblems(options);
    const factoryClass = options.useClass ?? (typeof options.useExisting === 'function' ? options.useExisting : undefined);
    if (factoryClass !== undefined && typeof (factoryClass.prototype as { createPaymentOptions?: unknown })?.createPaymentOptions !== 'function') {
      problems.push(`${factoryClass.name || 'the class'} given as ${options.useClass ? 'useClass' : 'useExisting'} has no createPaymentOptions() method (implement PaymentOptionsFactory)`);
    }
    if (problems.length > 0) throw new PaymentConfigurationError(problems, options.account);
    return super.forRootAsync(options);
  }
}
