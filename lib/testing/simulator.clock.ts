/** Headroom kept below the last representable date for what is computed from the clock. */
const YEAR_MS = 366 * 86_400_000;

/**
 * The simulator's clock: a base clock plus whatever `advanceTime()` added. Token
 * expiry, rate-limit windows, session expiry and timestamps all read it, so a test
 * can jump ten minutes without waiting.
 */
export class SimulatorClock {
  private offsetMs = 0;

  constructor(private readonly base?: () => number) {}

  now(): number {
    // Date.now is looked up on every call so fake timers installed later still apply.
    return (this.base ?? Date.now)() + this.offsetMs;
  }

  /** `now()` as an ISO 8601 UTC string. */
  iso(): string {
    return new Date(this.now()).toISOString();
  }

  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError('advanceTime expects a non-negative number of ms');
    // past the last date JavaScript can show, every timestamp would throw (a 500 on every call);
    // a year kept free for what is computed from the clock (token expiry, retries, real time passing)
    if (!Number.isFinite(new Date(this.now() + ms + YEAR_MS).getTime())) {
      throw new RangeError(`advanceTime(${ms}) would take the simulator's clock past the last date JavaScript can represent (year 275760)`);
    }
    this.offsetMs += ms;
  }
}
