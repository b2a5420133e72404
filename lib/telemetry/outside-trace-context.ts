import { context, ROOT_CONTEXT } from '@opentelemetry/api';

/**
 * Runs `fn` in the empty OpenTelemetry context. A timer started there keeps no request's
 * trace: a loop shared by every delivery (lease renewal) belongs to none of them, and would
 * otherwise run each tick inside whichever delivery first started it, long after that ended.
 * Without a context manager this is a plain call.
 */
export function outsideTraceContext<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}
