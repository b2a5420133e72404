import { isThenable } from '../common/as-promise.util.js';
import { defaultCodeForStatus, SIMULATOR_ERROR_TABLE, SimulatorHttpError } from './simulator.errors.js';
import { errorAnswer, type SimulatorAnswer } from './simulator-request.js';
import type {
  SimulatedMode,
  SimulatorAnswerBody,
  SimulatorFault,
  SimulatorRequestRecord,
  SimulatorRewrittenAnswer,
} from './simulator.types.js';

type ArmedFault = SimulatorFault & { remaining: number };

/** Faults injected by the test, waiting for the requests they match. */
export class SimulatorFaults {
  private readonly armed: ArmedFault[] = [];

  inject(fault: SimulatorFault): void {
    const times = fault.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new RangeError('fault.times must be a positive integer');
    if (fault.kind === 'rewrite' && typeof fault.rewrite !== 'function') {
      throw new TypeError("A 'rewrite' fault needs a rewrite function");
    }
    if (fault.kind !== 'rewrite' && fault.rewrite !== undefined) {
      throw new TypeError(`fault.rewrite only applies to kind 'rewrite', not '${fault.kind}'`);
    }
    // a global or sticky RegExp would keep `lastIndex` between tests and miss every other request
    const path = fault.path instanceof RegExp && /[gy]/.test(fault.path.flags) ? new RegExp(fault.path.source, fault.path.flags.replace(/[gy]/g, '')) : fault.path;
    this.armed.push({ ...fault, path, remaining: times });
  }

  clear(): void {
    this.armed.length = 0;
  }

  /**
   * The oldest fault matching the request, used up by one; `undefined` when none does.
   * A string `path` matches the route or the full path, a RegExp is tested against the route
   * (a negation, `/^(?!\/payment\/create$)/`, would match every full path).
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

/** Whether the fault takes the place of handling; otherwise the request is handled first. */
export function preemptsHandling(fault: SimulatorFault): boolean {
  return fault.kind !== 'rewrite' && fault.kind !== 'trickle' && !fault.afterHandling;
}

/**
 * The answer of a `rewrite` fault: the handled answer with the body and/or status the
 * rewrite returns. A broken rewrite becomes a 500 `INTERNAL_ERROR` naming the problem,
 * so a mistake in a test shows up in the answer instead of passing unnoticed.
 */
export function rewrittenAnswer(fault: SimulatorFault, handled: SimulatorAnswer, request: SimulatorRequestRecord): SimulatorAnswer {
  try {
    // The rewrite may change its copy in place; the simulator's state never sees it.
    const copy = structuredClone(handled.body) as SimulatorAnswerBody;
    const result = checkRewrite(fault.rewrite!(copy, handled.status, request));
    const body = result.body !== undefined ? result.body : copy;
    if (JSON.stringify(body) === undefined) throw new TypeError('the new body is not a JSON value');
    return { status: result.status ?? handled.status, body, headers: handled.headers };
  } catch (err) {
    const message = (err as { message?: unknown } | null | undefined)?.message;
    return errorAnswer(new SimulatorHttpError('INTERNAL_ERROR', `rewrite fault failed: ${typeof message === 'string' ? message : String(err)}`));
  }
}

function checkRewrite(result: unknown): SimulatorRewrittenAnswer {
  if (result === undefined) return {};
  if (isThenable(result)) {
    // The answer goes out now, not when an async rewrite settles: its result would be ignored
    // and a rejection left unhandled (which can end the process), so it is observed and refused.
    try {
      result.then(undefined, () => undefined);
    } catch {
      // a thenable whose then() throws has nothing left to observe
    }
    throw new TypeError('rewrite must be synchronous: return { body?, status? } or nothing, not a Promise (is it an async function?)');
  }
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    throw new TypeError(`return { body?, status? } or nothing, not ${JSON.stringify(result)}`);
  }
  const unknown = Object.keys(result).filter((k) => k !== 'body' && k !== 'status');
  if (unknown.length) throw new TypeError(`return { body?, status? }; got unknown field(s) ${unknown.join(', ')}`);
  const { status } = result as SimulatorRewrittenAnswer;
  if (status !== undefined && !(Number.isInteger(status) && status >= 200 && status <= 599)) {
    throw new TypeError(`status must be an integer from 200 to 599, not ${JSON.stringify(status)}`);
  }
  return result as SimulatorRewrittenAnswer;
}
