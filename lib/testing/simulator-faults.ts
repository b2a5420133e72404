import { defaultCodeForStatus, SIMULATOR_ERROR_TABLE, SimulatorHttpError } from './simulator.errors.js';
import { errorAnswer, type SimulatorAnswer } from './simulator-request.js';
import type { SimulatedMode, SimulatorFault } from './simulator.types.js';

type ArmedFault = SimulatorFault & { remaining: number };

/** Faults injected by the test, waiting for the requests they match. */
export class SimulatorFaults {
  private readonly armed: ArmedFault[] = [];

  inject(fault: SimulatorFault): void {
    const times = fault.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new RangeError('fault.times must be a positive integer');
    this.armed.push({ ...fault, remaining: times });
  }

  clear(): void {
    this.armed.length = 0;
  }

  /**
   * The oldest fault matching the request, used up by one; `undefined` when none does.
   * A string `path` matches the route or the full path, a RegExp is tested against the route.
   */
  take(method: string, route: string, fullPath: string, mode: SimulatedMode | undefined): SimulatorFault | undefined {
    const i = this.armed.findIndex(
      (f) =>
        (!f.method || f.method === method) &&
        (!f.mode || f.mode === mode) &&
        (f.path === undefined || (typeof f.path === 'string' ? f.path === route || f.path === fullPath : f.path.test(route))),
    );
    if (i < 0) return undefined;
    const f = this.armed[i];
    if (--f.remaining <= 0) this.armed.splice(i, 1);
    return f;
  }
}

/**
 * The error envelope of a `status` fault: `code` defaults from the status and the
 * status from the code; a 429 gets `Retry-After: 1` unless the fault gives one.
 */
export function statusFaultAnswer(fault: SimulatorFault): SimulatorAnswer {
  const code = fault.code ?? defaultCodeForStatus(fault.status ?? 500);
  const status = fault.status ?? SIMULATOR_ERROR_TABLE[code]?.status ?? 500;
  const retryAfter = fault.retryAfterSeconds ?? (status === 429 ? 1 : undefined);
  const headers: Record<string, string> = retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {};
  return errorAnswer(new SimulatorHttpError(code, undefined, {}, status, headers));
}
