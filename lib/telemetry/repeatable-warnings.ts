import { monotonicNow } from '../common/monotonic-clock.util.js';

/** Lines of one kind of repeatable warning said at `warn` per minute; the rest go to `debug`. */
const REPEATABLE_WARNINGS_PER_MINUTE = 10;
const MINUTE_MS = 60_000;

/**
 * Warnings that a captured signed delivery, sent again and again within its replay window, would
 * repeat per request (the other environment's event, a copy meeting the claim of a running
 * handler, a signed body refused): anyone holding one capture could flood `warn`. Per kind, up to
 * ten a minute are said at `warn` (distinct events the service sends stay visible), the rest at
 * `debug`; the next `warn` line says how many went to `debug`. The metrics count every one.
 * Kinds are a fixed set (codes), so the map stays small.
 */
export class RepeatableWarnings {
  private readonly kinds = new Map<string, { windowStart: number; said: number; quieted: number }>();

  /** `warn` (with a note of those quieted since the last) or `debug` for a warning of `kind` now. */
  level(kind: string): { level: 'warn' | 'debug'; note: string } {
    const now = monotonicNow();
    let state = this.kinds.get(kind);
    if (state === undefined) this.kinds.set(kind, (state = { windowStart: now, said: 0, quieted: 0 }));
    if (now - state.windowStart >= MINUTE_MS) {
      state.windowStart = now;
      state.said = 0;
    }
    if (state.said >= REPEATABLE_WARNINGS_PER_MINUTE) {
      state.quieted++;
      return { level: 'debug', note: '' };
    }
    state.said++;
    const note =
      state.quieted === 0
        ? ''
        : ` (${state.quieted} more like it before this were logged at debug: a replayed delivery repeats them, so at most ${REPEATABLE_WARNINGS_PER_MINUTE} a minute at warn)`;
    state.quieted = 0;
    return { level: 'warn', note };
  }
}
