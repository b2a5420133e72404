import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ConfigModule } from '@nestjs/config';
import { EventEmitterModule } from '@nestjs/event-emitter';
import type { PaymentModuleAsyncOptions, PaymentModuleOptions } from './config/payment-module-options.interface.js';
import { PaymentGatewayService } from './client/payment-gateway.service.js';
import { PaymentEventDispatcher } from './events/payment-event.dispatcher.js';
import { PaymentEventExplorer } from './events/payment-event.explorer.js';
import { PAYMENT_MODULE_OPTIONS, PAYMENT_RESOLVED_OPTIONS } from './payment.constants.js';
import { createAsyncOptionsProviders, createResolvedOptionsProvider, PAYMENT_READ_ENV } from './payment.providers.js';
import { createWebhookEventStoreProviders } from './stores/webhook-event-store.providers.js';
import { WebhookEventStore } from './stores/webhook-event-store.interface.js';
import { createPaymentWebhookParts } from './webhooks/payment-webhook.providers.js';

/**
 * Entry point of the package. `PaymentModule.forRoot()` with no argument reads `PAYMENT_*`
 * variables; it brings ConfigModule and EventEmitterModule itself, so a host needs nothing else.
 */
const PAYMENT_EVENT_EMITTER_OPTIONS = { wildcard: true, delimiter: '.' } as const;

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
    // A fresh controller class per module instance: its route is decided from the resolved options.
    const webhook = createPaymentWebhookParts();
    return {
      module: PaymentModule,
      global: isGlobal,
      // Wildcards on: host listeners such as @OnEvent('payment-gateway.payment.*') hear our events
      // even when the host's own EventEmitterModule was set up without them.
      imports: [ConfigModule.forRoot(), EventEmitterModule.forRoot(PAYMENT_EVENT_EMITTER_OPTIONS), DiscoveryModule, ...imports],
      controllers: [webhook.controller],
      providers: [
        ...optionProviders,
        { provide: PAYMENT_READ_ENV, useValue: readEnv },
        createResolvedOptionsProvider(),
        PaymentGatewayService,
        ...createWebhookEventStoreProviders(),
        PaymentEventExplorer,
        PaymentEventDispatcher,
        ...webhook.providers,
      ],
      exports: [PAYMENT_RESOLVED_OPTIONS, PaymentGatewayService, WebhookEventStore, PaymentEventDispatcher],
    };
  }
}
