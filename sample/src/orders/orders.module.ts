import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { DEFAULT_SHOP_DATABASE_PATH, ShopDatabase } from '../database/shop-database.js';
import { OrderPaymentHandlers } from './order-payment.handlers.js';
import { OrdersController } from './orders.controller.js';
import { OrdersRepository } from './orders.repository.js';
import { OrdersService } from './orders.service.js';

@Module({
  controllers: [OrdersController],
  providers: [
    {
      provide: ShopDatabase,
      inject: [ConfigService],
      useFactory: (config: ConfigService) => new ShopDatabase(config.get<string>('SHOP_DATABASE_PATH') || DEFAULT_SHOP_DATABASE_PATH),
    },
    OrdersRepository,
    OrdersService,
    OrderPaymentHandlers,
  ],
})
export class OrdersModule {}
