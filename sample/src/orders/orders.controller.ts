import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { Order, ProcessedEvent } from './order.types.js';
import { OrdersService, type PlacedOrder, type PlaceOrderInput } from './orders.service.js';

@Controller('orders')
export class OrdersController {
  constructor(@Inject(OrdersService) private readonly orders: OrdersService) {}

  /** `{ items: [{ sku, quantity, unitPrice }], currency }` or `{ amount, currency }` → the order and its payment token. */
  @Post()
  @HttpCode(201)
  place(@Body() body: PlaceOrderInput): Promise<PlacedOrder> {
    return this.orders.placeOrder(body ?? {});
  }

  @Get(':id')
  get(@Param('id') id: string): Order {
    return this.orders.get(id);
  }

  /** What the payment module delivered for this order and what the shop did with it. */
  @Get(':id/events')
  events(@Param('id') id: string): ProcessedEvent[] {
    return this.orders.events(id);
  }

  /** Retries opening the payment after a failure (same idempotency key: never two payments). */
  @Post(':id/payment')
  @HttpCode(200)
  retryPayment(@Param('id') id: string): Promise<PlacedOrder> {
    return this.orders.retryPayment(id);
  }

  @Post(':id/refund')
  @HttpCode(202)
  refund(@Param('id') id: string, @Body() body: { reason?: unknown } | undefined): Promise<Order> {
    return this.orders.refund(id, typeof body?.reason === 'string' ? body.reason : undefined);
  }
}
