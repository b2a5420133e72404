import type { LoggerService } from '@nestjs/common';

const LEVELS = ['log', 'error', 'warn', 'debug', 'verbose', 'fatal'] as const;

/**
 * `logger` whose calls never throw. A log transport of the app's that fails (closed, full)
 * must not turn a call the service carried out (a refund, a payout) into an error a caller
 * could take for "not done" and send again: its failure is dropped, the outcome stands.
 */
export function neverThrowingLogger(logger: LoggerService): LoggerService {
  const safe: Partial<Record<(typeof LEVELS)[number], (message: unknown, ...rest: unknown[]) => void>> = {};
  for (const level of LEVELS) {
    if (typeof logger[level] !== 'function') continue;
    safe[level] = (message, ...rest) => {
      try {
        logger[level]!(message, ...rest);
      } catch {
        // dropped: see above
      }
    };
  }
  return safe as LoggerService;
}
