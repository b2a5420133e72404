import type { Provider } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { readPaymentEnv } from './config/payment-env.js';
import type {
  PaymentModuleAsyncOptions,
  PaymentModuleOptions,
  PaymentOptionsFactory,
} from './config/payment-module-options.interface.js';
import { resolvePaymentOptions } from './config/payment-options.validation.js';
import { PAYMENT_MODULE_OPTIONS, PAYMENT_RESOLVED_OPTIONS } from './payment.constants.js';
import { PaymentMessages } from './payment.messages.js';

/** Token telling the resolver whether env variables fill what the options leave out. */
export const PAYMENT_READ_ENV = Symbol('PAYMENT_READ_ENV');

/** Merges env (through ConfigService) with the given options and validates them, once, at boot. */
export function createResolvedOptionsProvider(): Provider {
  return {
    provide: PAYMENT_RESOLVED_OPTIONS,
    useFactory: (options: PaymentModuleOptions, readEnv: boolean, config: ConfigService) =>
      resolvePaymentOptions(options, readEnv ? readPaymentEnv((name) => config.get(name)) : {}),
    inject: [PAYMENT_MODULE_OPTIONS, PAYMENT_READ_ENV, ConfigService],
  };
}

/** The provider(s) behind PAYMENT_MODULE_OPTIONS for forRootAsync(). */
export function createAsyncOptionsProviders(options: PaymentModuleAsyncOptions): Provider[] {
  if (options.useFactory) {
    return [{ provide: PAYMENT_MODULE_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] }];
  }
  const factoryClass = options.useClass ?? options.useExisting;
  if (!factoryClass) throw new Error(PaymentMessages.asyncOptionsMissingFactory());
  const providers: Provider[] = [
    {
      provide: PAYMENT_MODULE_OPTIONS,
      useFactory: (factory: PaymentOptionsFactory) => factory.createPaymentOptions(),
      inject: [factoryClass],
    },
  ];
  if (options.useClass) providers.push({ provide: options.useClass, useClass: options.useClass });
  return providers;
}
