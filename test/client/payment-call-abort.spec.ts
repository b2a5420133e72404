import { getEventListeners } from 'node:events';
import { eitherSignal } from '../../lib/client/payment-call-abort.js';

describe('eitherSignal', () => {
  it("puts one listener on a caller's signal however many calls share it, and takes it off after the last", () => {
    const caller = new AbortController();
    const shutdown = new AbortController();
    const calls = Array.from({ length: 20 }, () => eitherSignal(caller.signal, shutdown.signal));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
    for (const call of calls) call.dispose();
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });

  it('aborts every call still waiting, with the reason of the signal that fired; a disposed one stays as it was', () => {
    const caller = new AbortController();
    const shutdown = new AbortController();
    const calls = Array.from({ length: 12 }, () => eitherSignal(caller.signal, shutdown.signal));
    calls[0]!.dispose();
    const reason = new Error('the user gave up');
    caller.abort(reason);
    expect(calls[0]!.signal.aborted).toBe(false);
    for (const call of calls.slice(1)) expect(call.signal.reason).toBe(reason);
    // after the abort, a new call on the same signal is aborted from the start
    expect(eitherSignal(caller.signal, shutdown.signal).signal.aborted).toBe(true);
    for (const call of calls) call.dispose();
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });
});
