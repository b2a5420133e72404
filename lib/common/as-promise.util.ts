/** True for anything with a `then` method: a promise, or a promise-like of another library. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/** `run()` as a promise, a synchronous throw included (as a rejection). */
export function asPromise<T>(run: () => T | PromiseLike<T>): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error);
  }
}
