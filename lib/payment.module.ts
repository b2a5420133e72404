import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ConfigModule } from '@nestjs/config';
import { EventEmitterModule } from '@nestjs/event-emitter';
import type { PaymentModuleAsyncOptions, PaymentModuleOptions } from './config/payment-module-options.interface.js';
import { PAYMENT_MODULE_OPTIONS, PAYMENT_RESOLVED_OPTIONS } from './payment.constants.js';
import { createAsyncOptionsProviders, createResolvedOptionsProvider, PAYMENT_READ_ENV } from './payment.providers.js';

/**
 * Entry point of the package. `PaymentModule.forRoot()` with no argument reads `PAYMENT_*`
 * variables; it brings ConfigModule and EventEmitterModule itself, so a host needs nothing else.
 */
@Module({})
export class PaymentModule {
  static forRoot(options: PaymentModuleOptions = {}): DynamicModule {
    return PaymentModule.assemble([{ provide: PAYMENT_MODULE_OPTIONS, useValue: options }], [], true, options.isGlobal);
  }

  static forRootAsync(options: PaymentModuleAsyncOptions): DynamicModule {
    return PaymentModule.assemble(
      createAsyncOptionsProviders(options),
      options.imports ?? [],
      options.readEnv ?? true,
      options.isGlobal,
    );
  }

  private static assemble(
    optionProviders: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
    readEnv: boolean,
    isGlobal = false,
  ): DynamicModule {
    return {
      module: PaymentModule,
      global: isGlobal,
      imports: [ConfigModule.forRoot(), EventEmitterModule.forRoot(), DiscoveryModule, ...imports],
      providers: [...optionProviders, { provide: PAYMENT_READ_ENV, useValue: readEnv }, createResolvedOptionsProvider()],
      exports: [PAYMENT_RESOLVED_OPTIONS],
    };
  }
}
