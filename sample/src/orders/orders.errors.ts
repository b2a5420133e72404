import { HttpException, HttpStatus } from '@nestjs/common';

/** HTTP errors of the shop API: JSON `{ statusCode, code, message }` with a stable `code`. */
export class ShopHttpError extends HttpException {
  constructor(status: HttpStatus, readonly code: string, message: string, extra: Record<string, unknown> = {}) {
    super({ statusCode: status, code, message, ...extra }, status);
  }
}

export class InvalidOrderError extends ShopHttpError {
  constructor(message: string) {
    super(HttpStatus.BAD_REQUEST, 'INVALID_ORDER', message);
  }
}

export class OrderNotFoundError extends ShopHttpError {
  constructor(id: string) {
    super(HttpStatus.NOT_FOUND, 'ORDER_NOT_FOUND', `Order ${id} does not exist`);
  }
}

export class OrderStateError extends ShopHttpError {
  constructor(message: string) {
    super(HttpStatus.CONFLICT, 'ORDER_STATE_CONFLICT', message);
  }
}

/** The payment service refused or could not be reached; the order is kept and the call can be retried. */
export class PaymentUnavailableError extends ShopHttpError {
  constructor(message: string, extra: Record<string, unknown>) {
    super(HttpStatus.BAD_GATEWAY, 'PAYMENT_UNAVAILABLE', message, extra);
  }
}
