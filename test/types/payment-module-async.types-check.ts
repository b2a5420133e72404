/**
 * Compile-time proof that `PaymentModule.forRootAsync()` takes exactly one source of options, as it
 * checks when called: none, or two, type-checked and then threw. Checked by `npm run typecheck`;
 * each `@ts-expect-error` fails it if the line below starts compiling. Never run.
 */
import { Injectable } from '@nestjs/common';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { PaymentModule } from '../../lib/payment.module.js';
import type { PaymentOptionsFactory } from '../../lib/payment.module-definition.js';

class Settings {
  readonly baseUrl = 'http://127.0.0.1:9';
}

@Injectable()
class OptionsFromSettings implements PaymentOptionsFactory {
  createPaymentOptions(): PaymentModuleOptions {
    return { baseUrl: 'http://127.0.0.1:9' };
  }
}

export function asyncOptionsCheck(): void {
  // one source each: fine, with the module extras beside it
  PaymentModule.forRootAsync({ useFactory: () => ({}) });
  PaymentModule.forRootAsync({ inject: [Settings], useFactory: (settings: Settings) => ({ baseUrl: settings.baseUrl }), isGlobal: true, account: 'eu' });
  PaymentModule.forRootAsync({ useClass: OptionsFromSettings, webhookDecorators: [] });
  PaymentModule.forRootAsync({ useExisting: OptionsFromSettings, imports: [] });

  // @ts-expect-error no source of options (threw TypeError when called)
  PaymentModule.forRootAsync({});
  // @ts-expect-error two sources (threw PaymentConfigurationError when called)
  PaymentModule.forRootAsync({ useFactory: () => ({}), useClass: OptionsFromSettings });
  // @ts-expect-error two sources
  PaymentModule.forRootAsync({ useClass: OptionsFromSettings, useExisting: OptionsFromSettings });
  // @ts-expect-error `inject` is for useFactory: beside useClass Nest ignores it
  PaymentModule.forRootAsync({ useClass: OptionsFromSettings, inject: [Settings] });
}
