import { PaymentAbortedError, PaymentClientErrorCode, type PaymentApiError } from './payment-api.errors.js';
import type { ServiceCall } from './payment-service-call.interface.js';

/**
 * A signal that aborts when `a` or `b` does, with its reason; `dispose()` unhooks it once the
 * call ends. Not `AbortSignal.any()`: on Node 20 every call would leave an entry on the
 * long-lived shutdown signal that is never removed.
 */
export function eitherSignal(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; dispose(): void } {
  if (a.aborted) return { signal: a, dispose: () => undefined };
  if (b.aborted) return { signal: b, dispose: () => undefined };
  const either = new AbortController();
  const offA = onAbort(a, () => either.abort(a.reason));
  const offB = onAbort(b, () => either.abort(b.reason));
  return {
    signal: either.signal,
    dispose: () => {
      offA();
      offB();
    },
  };
}

/** The callbacks waiting on one signal, and the one listener the module put on it for them. */
const waitingOn = new WeakMap<AbortSignal, { callbacks: Set<() => void>; listener: () => void }>();

/**
 * Runs `callback` when `signal` aborts; the returned function unhooks it. The module puts one
 * listener on a signal however many calls wait on it (a caller's signal shared by 20 calls would
 * otherwise print Node's listener-leak warning), and takes it off when the last call is done.
 */
function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let waiting = waitingOn.get(signal);
  if (waiting === undefined) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      waitingOn.delete(signal);
      for (const waiter of [...callbacks]) waiter();
    };
    waiting = { callbacks, listener };
    waitingOn.set(signal, waiting);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callbacks, listener } = waiting;
  callbacks.add(callback);
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0) return;
    signal.removeEventListener('abort', listener);
    if (waitingOn.get(signal)?.listener === listener) waitingOn.delete(signal);
  };
}

/**
 * The call was given up before its next request left; `previous` is its last failed attempt,
 * if any, and `mayHaveReachedService` whether any earlier attempt may have been acted on.
 */
export function abortedCallError(
  call: ServiceCall,
  previous: PaymentApiError | undefined,
  mayHaveReachedService: boolean,
  account: string,
  /** Given up because the client shut down (`app.close()`), not by the caller's signal. */
  atShutdown = false,
): PaymentAbortedError {
  return new PaymentAbortedError({
    account,
    code: PaymentClientErrorCode.ABORTED,
    message:
      `${call.method} ${call.path} was ${atShutdown ? 'given up at shutdown (app.close())' : 'aborted by its signal'} ` +
      `before ${previous === undefined ? 'it was sent' : 'its next attempt'}` +
      (mayHaveReachedService ? '; an earlier attempt may have reached the service' : '; the service did not act on it'),
    method: call.method,
    path: call.path,
    idempotencyKey: call.idempotencyKey,
    mayHaveReachedService,
    cause: previous,
  });
}

/** A token check given up by its caller's signal; the request it shared with other checks goes on. */
export function abortedCheckError(path: string, account: string): PaymentAbortedError {
  return new PaymentAbortedError({
    account,
    code: PaymentClientErrorCode.ABORTED,
    message: `The token check (POST ${path}) was given up by its signal; a token request other checks share goes on without it`,
    method: 'POST',
    path,
    mayHaveReachedService: false,
  });
}
