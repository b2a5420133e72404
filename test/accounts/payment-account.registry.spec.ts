import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';

describe('PaymentAccountRegistry shutdown steps', () => {
  it('gives every account one start per step, and a close() tried again after shutdown starts anew', async () => {
    const registry = new PaymentAccountRegistry();
    const destroy = registry.shutdownStepStart('destroy');
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(registry.shutdownStepStart('destroy')).toBe(destroy);
    const shutdown = registry.shutdownStepStart('shutdown');
    expect(shutdown).toBeGreaterThan(destroy);
    registry.onApplicationShutdown();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(registry.shutdownStepStart('destroy')).toBeGreaterThan(shutdown);
  });
});
