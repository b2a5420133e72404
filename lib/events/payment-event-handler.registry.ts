import { Injectable } from '@nestjs/common';
import type { PaymentEventHandler } from './payment-event-handler.interface.js';
import { isKnownPaymentEventType, paymentEventFamilyOf } from './payment-event.types.js';

interface Entry {
  handler: PaymentEventHandler;
  account: string | undefined;
}

/** Most distinct (account, type) answers kept; types come from signed deliveries, so this is only a bound. */
const MAX_MEMOISED = 1024;

/**
 * Every `@OnPaymentEvent` handler of the application, filled once by the explorer at module
 * init and read by each account's dispatcher. A method bound several times is returned once.
 */
@Injectable()
export class PaymentEventHandlerRegistry {
  private readonly byPattern = new Map<string, Entry[]>();
  private readonly handlers: PaymentEventHandler[] = [];
  /** Memoised answers of `match`, per account then per event type. */
  private readonly matched = new Map<string, Map<string, readonly PaymentEventHandler[]>>();
  private memoised = 0;

  add(handler: PaymentEventHandler): void {
    this.forget();
    this.handlers.push(handler);
    for (const binding of handler.bindings) {
      for (const pattern of binding.patterns) {
        let list = this.byPattern.get(pattern);
        if (list === undefined) this.byPattern.set(pattern, (list = []));
        list.push({ handler, account: binding.account });
      }
    }
  }

  /**
   * Handlers of one event type received for `account`, in registration order: exact, then
   * family wildcard, then `'*'`; handlers bound to another account are left out. Types this
   * version does not know reach `'*'` only, since wildcard handlers are typed for the known
   * types of their family.
   */
  match(eventType: string, account: string): readonly PaymentEventHandler[] {
    let byType = this.matched.get(account);
    const cached = byType?.get(eventType);
    if (cached !== undefined) return cached;
    const keys = isKnownPaymentEventType(eventType) ? [eventType, `${paymentEventFamilyOf(eventType)}.*`, '*'] : ['*'];
    const found = new Set<PaymentEventHandler>();
    for (const key of keys) {
      for (const entry of this.byPattern.get(key) ?? []) {
        if (entry.account === undefined || entry.account === account) found.add(entry.handler);
      }
    }
    const handlers: readonly PaymentEventHandler[] = Object.freeze([...found]);
    if (this.memoised < MAX_MEMOISED) {
      if (byType === undefined) this.matched.set(account, (byType = new Map()));
      byType.set(eventType, handlers);
      this.memoised++;
    }
    return handlers;
  }

  private forget(): void {
    this.matched.clear();
    this.memoised = 0;
  }

  /** Every registered handler. */
  list(): readonly PaymentEventHandler[] {
    return this.handlers;
  }

  get size(): number {
    return this.handlers.length;
  }

  clear(): void {
    this.forget();
    this.byPattern.clear();
    this.handlers.length = 0;
  }
}
