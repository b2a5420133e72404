import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { PaymentModule } from 'nestjs-payment-gateway';
import { OrdersModule } from './orders/orders.module.js';

export interface ShopAppOptions {
  /** `.env` file to load; `false` reads the process environment only (the demo). @default 'sample/.env' */
  envFile?: string | false;
}

/**
 * The shop, wired as a host application would: ConfigModule reads `sample/.env`, then
 * `PaymentModule.forRoot()` takes every `PAYMENT_*` variable from it.
 */
@Module({})
export class AppModule {
  static register(options: ShopAppOptions = {}): DynamicModule {
    const envFile = options.envFile ?? 'sample/.env';
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({
          isGlobal: true,
          ...(envFile === false ? { ignoreEnvFile: true } : { envFilePath: envFile }),
        }),
        // Global, so OrdersModule (and any other module) can inject PaymentGatewayService.
        PaymentModule.forRoot({ isGlobal: true }),
        OrdersModule,
      ],
    };
  }
}
