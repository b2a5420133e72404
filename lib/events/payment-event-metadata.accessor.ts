import { Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { PAYMENT_EVENT_HANDLER_METADATA } from '../payment.constants.js';
import type { PaymentEventHandlerMetadata } from './payment-event-handler.interface.js';

/** Reads what `@OnPaymentEvent` stored on a method. */
@Injectable()
export class PaymentEventMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /**
   * Metadata of the method `name` of `prototype`, or `undefined` when it is not decorated: read
   * on the function, else on the property of the class that defines it, where `@OnPaymentEvent`
   * also writes it (the function is then a wrapper another decorator put in its place). Only
   * the defining class counts: a subclass's override without the decorator is not a handler.
   */
  getHandlerMetadata(prototype: object, name: string): PaymentEventHandlerMetadata | undefined {
    const method: unknown = (prototype as Record<string, unknown>)[name];
    if (typeof method !== 'function') return undefined;
    const onMethod = this.reflector.get<PaymentEventHandlerMetadata | undefined>(PAYMENT_EVENT_HANDLER_METADATA, method);
    if (onMethod !== undefined) return onMethod;
    let owner: object | null = prototype;
    while (owner !== null && !Object.hasOwn(owner, name)) owner = Object.getPrototypeOf(owner) as object | null;
    return owner === null ? undefined : (Reflect.getOwnMetadata(PAYMENT_EVENT_HANDLER_METADATA, owner, name) as PaymentEventHandlerMetadata | undefined);
  }
}
