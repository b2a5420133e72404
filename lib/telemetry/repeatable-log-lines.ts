import type { LoggerService } from '@nestjs/common';
import { monotonicNow } from '../common/monotonic-clock.util.js';

/** Lines of one kind said at the loud level per minute; the rest go to `debug`. */
const REPEATABLE_LINES_PER_MINUTE = 10;
const MINUTE_MS = 60_000;

/**
 * Log lines that a captured signed delivery, sent again and again within its replay window, would
 * repeat per request (the other environment's event, a copy meeting the claim of a running
 * handler, a signed body refused, a handler that keeps failing on that event): anyone holding one
 * capture could flood `warn` or `error`. Per kind, up to ten a minute are said at the loud level
 * (distinct events the service sends stay visible, and so do its retries of a failing one, minutes
 * apart), the rest at `debug`; the next loud line says how many went to `debug`. The metrics count
 * every one. Kinds are codes (a fixed set) or, with `maxKinds`, verified event ids: only the
 * service can sign those, and the map is emptied when it reaches the bound.
 */
export class RepeatableLogLines {
  private readonly kinds = new Map<string, { windowStart: number; said: number; quieted: number }>();

  constructor(
    /** The loud level's name, for the note. */
    private readonly loud: 'warn' | 'error' = 'warn',
    private readonly maxKinds = Number.POSITIVE_INFINITY,
  ) {}

  /** The loud level (with a note of those quieted since the last) or `debug` for a line of `kind` now. */
  level(kind: string): { level: 'warn' | 'error' | 'debug'; note: string } {
    const now = monotonicNow();
    let state = this.kinds.get(kind);
    if (state === undefined) {
      if (this.kinds.size >= this.maxKinds) this.kinds.clear();
      this.kinds.set(kind, (state = { windowStart: now, said: 0, quieted: 0 }));
    }
    if (now - state.windowStart >= MINUTE_MS) {
      state.windowStart = now;
      state.said = 0;
    }
    if (state.said >= REPEATABLE_LINES_PER_MINUTE) {
      state.quieted++;
      return { level: 'debug', note: '' };
    }
    state.said++;
    const note =
      state.quieted === 0
        ? ''
        : ` (${state.quieted} more like it before this were logged at debug: a replayed delivery repeats them, so at most ${REPEATABLE_LINES_PER_MINUTE} a minute at ${this.loud})`;
    state.quieted = 0;
    return { level: this.loud, note };
  }

  /**
   * Logs `line` of `kind` at the level `level` picks, with its note; `trace` (a stack) goes with an
   * `error` line as Nest's second argument (a `debug` line has none: its message is one line).
   */
  say(logger: LoggerService, kind: string, line: string, trace?: string): void {
    const { level, note } = this.level(kind);
    if (level === 'debug') logger.debug?.(line);
    else if (level === 'error') logger.error(line + note, trace);
    else logger.warn(line + note);
  }
}
