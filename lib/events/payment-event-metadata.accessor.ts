import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { PAYMENT_EVENT_HANDLER_METADATA } from '../payment.constants.js';
import type { PaymentEventHandlerMetadata } from './payment-event-handler.interface.js';

/** Reads what `@OnPaymentEvent` stored on a method. */
@Injectable()
export class PaymentEventMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** Metadata of a handler method, or `undefined` when it is not decorated. */
  getHandlerMetadata(method: unknown): PaymentEventHandlerMetadata | undefined {
    if (typeof method !== 'function') return undefined;
    return this.reflector.get<PaymentEventHandlerMetadata | undefined>(PAYMENT_EVENT_HANDLER_METADATA, method);
  }
}
