/** The longest delay a Node timer keeps: a longer one fires at once (with a TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * `promise`, or a rejection with `timeoutError()` when it has not settled within `ms`. The
 * timer never keeps the process alive and is cleared as soon as the race is decided; the
 * losing promise is left to settle on its own. With `bounded`, the time-out applies only if
 * `bounded()` is still true when it comes; past that, `promise` is waited for whatever it takes.
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number, timeoutError: () => Error, bounded?: () => boolean): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (bounded === undefined || bounded()) reject(timeoutError());
    }, ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** `call`, bounded by `timeoutMs` where one is set (a store call of the queue worker; the route has its sender's time-out). */
export function withOptionalTimeout<T>(call: Promise<T>, timeoutMs: number | undefined): Promise<T> {
  return timeoutMs === undefined ? call : withTimeout(call, timeoutMs, () => new Error(`the store did not answer within ${timeoutMs} ms`));
}
