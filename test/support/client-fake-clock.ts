import type { PaymentClock } from '../../lib/client/payment-client.clock.js';

/**
 * Virtual time for client tests: `sleep` only resolves when the test (or `autoAdvance`)
 * moves the clock, so minutes of rate-limit windows pass instantly and deterministically.
 */
export class ClientFakeClock implements PaymentClock {
  private current: number;
  private readonly sleepers: Array<{ until: number; resolve: () => void }> = [];
  /** Every `sleep` request in ms, in call order. */
  readonly sleeps: number[] = [];

  constructor(
    start = Date.UTC(2026, 0, 1),
    /** When true, `sleep` advances the clock itself (virtual time, no test driving). */
    private readonly autoAdvance = false,
    /** Called with the ms a sleep moved the clock (e.g. to advance a simulator too). */
    private readonly onAdvance?: (ms: number) => void,
  ) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  /** Like the system clock, ends at once when `signal` aborts (or had), leaving no sleeper behind. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const wait = Math.max(0, ms);
    this.sleeps.push(wait);
    if (signal?.aborted) return Promise.resolve();
    if (this.autoAdvance) {
      // yield first so concurrent callers run in a realistic order
      return Promise.resolve().then(() => this.advance(wait));
    }
    return new Promise((resolve) => {
      const sleeper = {
        until: this.current + wait,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const at = this.sleepers.indexOf(sleeper);
        if (at !== -1) this.sleepers.splice(at, 1);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.sleepers.push(sleeper);
    });
  }

  advance(ms: number): void {
    this.current += ms;
    this.onAdvance?.(ms);
    for (let i = this.sleepers.length - 1; i >= 0; i--) {
      if (this.sleepers[i].until <= this.current) this.sleepers.splice(i, 1)[0].resolve();
    }
  }

  get pendingSleepers(): number {
    return this.sleepers.length;
  }
}

/** Lets queued promise callbacks run. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}
