import { type DynamicModule, Module } from '@nestjs/common';
import {
  ConfigurablePaymentModule,
  type PaymentModuleAsyncOptions,
  type PaymentModuleRootOptions,
} from './payment.module-definition.js';
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
    return super.forRoot(options);
  }

  static override forRootAsync(options: PaymentModuleAsyncOptions): DynamicModule {
    if (!options?.useFactory && !options?.useClass && !options?.useExisting) {
      throw new TypeError(PaymentMessages.asyncOptionsMissingFactory());
    }
    return super.forRootAsync(options);
  }
}
