import { PAYMENT_EVENT_HANDLER_METADATA } from '../payment.constants.js';
import { assertPaymentAccountName } from '../accounts/payment-account.name.js';
import { PaymentConfigurationError } from '../config/payment-configuration.errors.js';
import type { PaymentEventBinding, PaymentEventHandlerMetadata } from './payment-event-handler.interface.js';
import { assertPaymentEventPatterns } from './payment-event-patterns.js';
import type { PaymentEventForPattern, PaymentEventPattern } from './payment-event.types.js';

/**
 * A method decorator that only fits methods able to take the event of `P`: every event the
 * pattern delivers must be assignable to the method's parameter (or it takes none). Checked
 * as a conditional type, not as `H extends (event: ...) => unknown`: without
 * `strictFunctionTypes` (the tsconfig `nest new` writes has no `strict`) parameters compare
 * both ways, and a too-narrow one (`'payment.*'` into `PaymentEvent<'payment.succeeded'>`)
 * would compile. The return type of `OnPaymentEvent`: exported so the declarations of a
 * decorator composed over it (`export const OnPaid = () => OnPaymentEvent('payment.succeeded')`)
 * can name it.
 * @publicApi
 */
export type PaymentEventHandlerDecorator<P extends PaymentEventPattern> = <H extends (...args: never[]) => unknown>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<H> & (TakesEventOf<P, H> extends true ? unknown : never) & (ReturnsGenerator<H> extends true ? never : unknown),
) => void;

/** `true` when `H` is a generator method: calling it returns a generator without running its body (refused). */
type ReturnsGenerator<H extends (...args: never[]) => unknown> =
  0 extends 1 & ReturnType<H> ? false : ReturnType<H> extends Generator<unknown, unknown, never> | AsyncGenerator<unknown, unknown, never> ? true : false;

/**
 * `true` when `H` takes no parameter, or can be called with the event of `P` alone: its first
 * parameter takes every event of `P` and any other is optional (it is called with one argument).
 * A tuple check: tuples compare element by element whatever `strictFunctionTypes` says.
 */
type TakesEventOf<P extends PaymentEventPattern, H extends (...args: never[]) => unknown> =
  Parameters<H> extends [] ? true : [PaymentEventForPattern<P>] extends Parameters<H> ? true : false;

/** Options of `@OnPaymentEvent`. @publicApi */
export interface OnPaymentEventOptions {
  /**
   * Receive only this account's events (`PaymentModule.forRoot({ account })`). Without it
   * the handler receives every account's events; `event.account` tells which.
   */
  account?: string | undefined;
}

/**
 * Runs the decorated provider method for every verified, first-time delivery of the
 * matching events. Accepts an event type (`'payment.succeeded'`), a family wildcard
 * (`'payment.*'`), `'*'` (every event, including types this version does not know), or an
 * array of them. The method receives the typed event; a parameter type that cannot take it
 * is a compile error. A returned promise or observable is waited for.
 *
 * A handler that throws or rejects makes the delivery fail (non-2xx), so the service sends
 * the event again: make handlers idempotent by `eventId`.
 *
 * @example
 * ```ts
 * @OnPaymentEvent('payment.succeeded')
 * async fulfil(event: PaymentEvent<'payment.succeeded'>) { ... }
 *
 * @OnPaymentEvent('refund.*', { account: 'eu' })
 * onEuRefund(event: PaymentEvent<'refund.succeeded' | 'refund.failed'>) { ... }
 * ```
 * @publicApi
 */
export function OnPaymentEvent<const P extends PaymentEventPattern>(
  patterns: P | readonly P[],
  options: OnPaymentEventOptions = {},
): PaymentEventHandlerDecorator<P> {
  const list: readonly unknown[] = Array.isArray(patterns) ? patterns : [patterns];
  assertPaymentEventPatterns(list);
  assertHandlerOptions(options);
  if (options.account !== undefined) assertPaymentAccountName(options.account, '@OnPaymentEvent');
  const binding: PaymentEventBinding = { patterns: [...new Set(list)], account: options.account };
  return (target, propertyKey, descriptor) => {
    if (typeof descriptor?.value !== 'function') {
      throw new TypeError(`@OnPaymentEvent can only decorate methods (got ${String(propertyKey)})`);
    }
    // Handlers are found on provider instances; a static method would silently never run.
    if (typeof target === 'function') {
      throw new TypeError(`@OnPaymentEvent cannot decorate static methods (got ${target.name}.${String(propertyKey)})`);
    }
    // calling one returns a generator without running its body: the event would pass for handled
    const kind = Object.prototype.toString.call(descriptor.value);
    if (kind === '[object GeneratorFunction]' || kind === '[object AsyncGeneratorFunction]') {
      throw new TypeError(
        `@OnPaymentEvent cannot decorate a generator method (got ${target.constructor.name}.${String(propertyKey)}): calling it would not run its body; make it a plain or async method`,
      );
    }
    // Nest's method scan (as for @OnEvent) lists string names only: a symbol-named one would never run.
    if (typeof propertyKey === 'symbol') {
      throw new TypeError(`@OnPaymentEvent cannot decorate a method named by a symbol (got ${target.constructor.name}[${String(propertyKey)}]); give it a string name`);
    }
    // Stacked decorators add bindings; the method still runs once per event.
    const existing = (Reflect.getMetadata(PAYMENT_EVENT_HANDLER_METADATA, descriptor.value) ??
      Reflect.getOwnMetadata(PAYMENT_EVENT_HANDLER_METADATA, target, propertyKey)) as PaymentEventHandlerMetadata | undefined;
    const metadata: PaymentEventHandlerMetadata = { bindings: [...(existing?.bindings ?? []), binding] };
    Reflect.defineMetadata(PAYMENT_EVENT_HANDLER_METADATA, metadata, descriptor.value);
    // and on the class's property: a decorator applied after this one (above it) that replaces
    // the method with a wrapper (a transaction, a retry) would otherwise lose the handler
    Reflect.defineMetadata(PAYMENT_EVENT_HANDLER_METADATA, metadata, target, propertyKey);
  };
}

/**
 * Plain JavaScript (or a cast) can pass `'eu'` or `{ acount: 'eu' }`: read as no `account`, the
 * handler would receive every account's events, so the class fails to load instead.
 */
function assertHandlerOptions(options: unknown): asserts options is OnPaymentEventOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    const given = options === null ? 'null' : Array.isArray(options) ? 'an array' : `a ${typeof options}`;
    throw new PaymentConfigurationError([`@OnPaymentEvent: the options must be an object such as { account: 'eu' }, got ${given}`]);
  }
  // an object literal's keys are options; an instance of the app's own class is read for `account` only
  const prototype: unknown = Object.getPrototypeOf(options);
  if (prototype !== Object.prototype && prototype !== null) return;
  const unknown = Object.keys(options).filter((key) => key !== 'account');
  if (unknown.length > 0) {
    throw new PaymentConfigurationError(unknown.map((key) => `@OnPaymentEvent: unknown option '${key.slice(0, 64)}' (the one option is 'account')`));
  }
}
