import { DEFAULT_RATE_LIMITS } from '../config/payment-options.defaults.js';
import { SimulatorHttpError } from './simulator.errors.js';

/** Limits of the service (requests per rolling minute). @publicApi */
export interface SimulatorRateLimits {
  /** `POST /authentication/token` per client IP. @default 10 */
  tokenPerMinute: number;
  /** `POST /payment/create` per access token. @default 30 */
  createPaymentPerMinute: number;
  /** `GET /payment/status` and `GET /payments/gateways` per access token. @default 60 */
  readsPerMinute: number;
  /** Refunds, payouts and subaccount calls per client id. @default 30 */
  moneyMovementPerMinute: number;
}

/** The service's published limits (the client's defaults are the same figures). @publicApi */
export const SPEC_RATE_LIMITS: Readonly<SimulatorRateLimits> = Object.freeze({ ...DEFAULT_RATE_LIMITS });

const WINDOW_MS = 60_000;

/**
 * Rolling-window counter on the simulator's clock, so `advanceTime(60_000)` frees
 * every window. Only accepted requests count.
 */
export class SimulatorRateLimiter {
  private readonly hits = new Map<string, number[]>();

  /** Without `limits` nothing is limited. */
  constructor(
    private readonly now: () => number,
    private readonly limits?: Readonly<SimulatorRateLimits>,
  ) {}

  /** Counts a request of `scope` from `caller`, or throws 429 `RATE_LIMITED` with `Retry-After` once the limit is reached. */
  enforce(scope: keyof SimulatorRateLimits, caller: string): void {
    if (!this.limits) return;
    const wait = this.take(`${scope}:${caller}`, this.limits[scope]);
    if (wait > 0) throw new SimulatorHttpError('RATE_LIMITED', undefined, {}, 429, { 'retry-after': String(wait) });
  }

  /** Records a hit and returns 0, or returns the whole seconds to wait when `limit` is reached. */
  private take(key: string, limit: number): number {
    const now = this.now();
    const list = (this.hits.get(key) ?? []).filter((t) => t > now - WINDOW_MS);
    if (list.length >= limit) {
      this.hits.set(key, list);
      return Math.max(1, Math.ceil((list[0] + WINDOW_MS - now) / 1000));
    }
    list.push(now);
    this.hits.set(key, list);
    return 0;
  }

  clear(): void {
    this.hits.clear();
  }
}
