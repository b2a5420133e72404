// The handler registry alone: filled by hand (the explorer does it in the app), read as each
// account's dispatcher reads it.
import type { PaymentEventBinding, PaymentEventHandler } from '../../lib/events/payment-event-handler.interface.js';
import { PaymentEventHandlerRegistry } from '../../lib/events/payment-event-handler.registry.js';
import type { PaymentEventPattern } from '../../lib/events/payment-event.types.js';

function handler(name: string, ...bindings: Array<[PaymentEventPattern[], string?]>): PaymentEventHandler {
  const list: PaymentEventBinding[] = bindings.map(([patterns, account]) => (account === undefined ? { patterns } : { patterns, account }));
  return { name, bindings: list, scoped: false, invoke: () => undefined };
}

const names = (handlers: readonly PaymentEventHandler[]) => handlers.map((h) => h.name);

describe('PaymentEventHandlerRegistry', () => {
  it('matches the exact type, then the family wildcard, then the catch-all, in registration order within each', () => {
    const registry = new PaymentEventHandlerRegistry();
    registry.add(handler('all', [['*']]));
    registry.add(handler('family', [['payment.*']]));
    registry.add(handler('exact', [['payment.succeeded']]));
    registry.add(handler('refunds', [['refund.*']]));
    expect(names(registry.match('payment.succeeded', 'default'))).toEqual(['exact', 'family', 'all']);
    expect(names(registry.match('refund.failed', 'default'))).toEqual(['refunds', 'all']);
  });

  it('gives an event type this version does not know to catch-all handlers only', () => {
    const registry = new PaymentEventHandlerRegistry();
    registry.add(handler('all', [['*']]));
    registry.add(handler('family', [['payment.*']]));
    expect(names(registry.match('payment.disputed', 'default'))).toEqual(['all']);
  });

  it('returns a handler once however many of its patterns or bindings match', () => {
    const registry = new PaymentEventHandlerRegistry();
    registry.add(handler('many', [['payment.succeeded', 'payment.*']], [['*']]));
    expect(names(registry.match('payment.succeeded', 'default'))).toEqual(['many']);
  });

  it("leaves out handlers bound to another account; unbound handlers hear every account's events", () => {
    const registry = new PaymentEventHandlerRegistry();
    registry.add(handler('eu only', [['payment.succeeded'], 'eu']));
    registry.add(handler('any account', [['payment.succeeded']]));
    expect(names(registry.match('payment.succeeded', 'eu'))).toEqual(['eu only', 'any account']);
    expect(names(registry.match('payment.succeeded', 'default'))).toEqual(['any account']);
  });

  it('answers from memory until a handler is added, then includes it', () => {
    const registry = new PaymentEventHandlerRegistry();
    registry.add(handler('first', [['payment.succeeded']]));
    const before = registry.match('payment.succeeded', 'default');
    expect(registry.match('payment.succeeded', 'default')).toBe(before);
    registry.add(handler('second', [['*']]));
    expect(names(registry.match('payment.succeeded', 'default'))).toEqual(['first', 'second']);
    expect(Object.isFrozen(before)).toBe(true);
  });

  it('stays correct past its memory bound (1,024 remembered answers; types come from deliveries)', () => {
    const registry = new PaymentEventHandlerRegistry();
    registry.add(handler('all', [['*']]));
    for (let i = 0; i < 2000; i++) expect(names(registry.match(`custom.type_${i}`, 'default'))).toEqual(['all']);
    expect(registry.size).toBe(1);
  });
});
