import type { SimulatedMerchant, SimulatedMode } from './simulator.types.js';

/** Freezes `value` and every object in it: shared tables must not be changed by one test for all. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** An access token lives 10 minutes after it is issued. @publicApi */
export const SIMULATOR_TOKEN_TTL_MS = 10 * 60_000;

/** Gateways of `GET /payments/gateways`. `bank-transfer` has no API refunds (`PAY_2006`). @publicApi */
export const SIMULATED_GATEWAYS: ReadonlyArray<Readonly<{ id: string; name: string; apiRefunds: boolean; asynchronous: boolean }>> = deepFreeze([
  { id: 'card', name: 'Card', apiRefunds: true, asynchronous: false },
  { id: 'mobile-money', name: 'Mobile money', apiRefunds: true, asynchronous: true },
  { id: 'bank-transfer', name: 'Bank transfer', apiRefunds: false, asynchronous: false },
]);

/** The merchant a simulator has when the options name none. */
export const DEFAULT_MERCHANT: Readonly<SimulatedMerchant> = Object.freeze({
  merchantId: 1,
  clientId: 'sandbox-client',
  clientSecret: 'sandbox-secret',
  webhookSecret: 'whsec_sandbox',
  mode: 'sandbox',
  walletBalance: '1000.00000000',
});

/**
 * Base path of each environment, as the service serves them: written apart from the client's
 * defaults (`SANDBOX_BASE_PATH`, `LIVE_BASE_PATH`), so a slip in one fails the tests against the other.
 */
export const BASE_PATHS: ReadonlyArray<readonly [string, SimulatedMode]> = [
  ['/sandbox/api/v1', 'sandbox'],
  ['/api/v1', 'live'],
];
