import { Injectable } from '@nestjs/common';
import type { PaymentHealthProbe } from './payment-health.interface.js';

/**
 * Every health probe of the app's accounts, filled while providers are created (before any
 * request). The extension point for dependencies of their own: a feature that adds one (the
 * queue mode's Redis, say) registers a probe from its provider's constructor:
 * `probes.register({ account, component: 'queue', details: { url }, check: () => ping() })`.
 */
@Injectable()
export class PaymentHealthProbes {
  private readonly probes: PaymentHealthProbe[] = [];

  /** Adds a probe; a second probe for the same account and component replaces the first. */
  register(probe: PaymentHealthProbe): void {
    const i = this.probes.findIndex((p) => p.account === probe.account && p.component === probe.component);
    if (i >= 0) this.probes[i] = probe;
    else this.probes.push(probe);
  }

  /** Probes in registration order. */
  list(): readonly PaymentHealthProbe[] {
    return this.probes;
  }
}
