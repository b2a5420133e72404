import { HttpException } from '@nestjs/common';
import { INTERCEPTORS_METADATA, RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';

// What `PaymentWebhookIdempotencyInterceptor` reads of the route it runs on, and the fixes it names.

/**
 * Whether the handler answers through `@Res()`/`@Next()` itself (Nest's own test: such a parameter, and
 * no `passthrough`). Nest keeps parameter metadata under the method's name, not the function's: a
 * decorator that replaced the method (tracing, auditing) left a function of another name or none.
 */
export function routeAnswersByItself(controller: object, methodName: string): boolean {
  const args: Record<string, unknown> = Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, methodName) ?? {};
  const handled = Object.keys(args).some((key) => key.startsWith(`${RouteParamtypes.RESPONSE}:`) || key.startsWith(`${RouteParamtypes.NEXT}:`));
  return handled && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, controller, methodName) !== true;
}

export const RESPONSE_HANDLED_FIX =
  'the handler takes @Res() (or @Next()) without passthrough, so Nest sends nothing the interceptor returns and every copy of a handled event ' +
  'would wait for an answer: use @Res({ passthrough: true }) and return the body';

/**
 * Whether another interceptor runs inside `interceptor` (between it and the handler). Nest runs the
 * global interceptors (`globals`, in order), then the class's, then the method's. Entries that are
 * idempotency interceptors too (`isIdempotencyInterceptor`: the same one listed twice, on the class
 * and the method, or globally and on the route) do not count: a claimed request passes through them.
 * When `interceptor` is in no list (a global one without `globals` known), it is taken as innermost
 * unless the method's list (or the class's, when the method has none) ends with another one.
 */
export function runsInterceptorsInside(
  interceptor: object,
  controller: object,
  handler: object,
  globals: readonly unknown[],
  isIdempotencyInterceptor: (entry: unknown) => boolean,
): boolean {
  const own: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? [];
  const ofClass: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, controller) ?? [];
  const isThis = (entry: unknown): boolean => entry === interceptor || isInstanceOf(interceptor, entry);
  const all = [...globals, ...ofClass, ...own];
  const at = all.findIndex(isThis);
  if (at !== -1) return all.slice(at + 1).some((entry) => !isIdempotencyInterceptor(entry));
  const last = (own.length > 0 ? own : ofClass).at(-1);
  return last !== undefined && !isIdempotencyInterceptor(last);
}

/** `value instanceof entry`, false for an entry that is no class (a request-scoped global's factory, an arrow function). */
export function isInstanceOf(value: unknown, entry: unknown): boolean {
  return typeof entry === 'function' && typeof entry.prototype === 'object' && entry.prototype !== null && value instanceof entry;
}

/** A timeout's error: rxjs `timeout()`'s own (and other `TimeoutError`s), or the 408/504 an interceptor maps it to. */
export function isTimeoutError(error: unknown): boolean {
  if (error instanceof HttpException) return error.getStatus() === 408 || error.getStatus() === 504;
  return error instanceof Error && error.name === 'TimeoutError';
}

/**
 * Whether an error from behind another interceptor may have left the handler running: a timeout,
 * or what a timeout may be mapped to (any 5xx: a 503 `ServiceUnavailableException` is common; an
 * error that is no `HttpException`, a renamed `TimeoutError`). A 4xx other than 408 is an answer
 * (a pipe's 400 before the handler ran, the handler's own refusal).
 */
export function mayLeaveHandlerRunning(error: unknown): boolean {
  if (isTimeoutError(error)) return true;
  return !(error instanceof HttpException) || error.getStatus() >= 500;
}

export const TIMEOUT_INSIDE_FIX =
  'the handler may still be running, so its claim is kept until its lease lapses (a copy meanwhile gets 409; one after it runs the handler again). ' +
  'List PaymentWebhookIdempotencyInterceptor inside your timeout (after it in @UseInterceptors, or on the method when the timeout is on the class) so the timeout ends the request and the claim follows the handler';

export const KEY_THREW_FIX =
  'the @WebhookIdempotencyKey function threw (its error is the cause of this exception): return undefined when the request carries no key ' +
  '(answered 400 WEBHOOK_IDEMPOTENCY_KEY_MISSING), e.g. req.body?.deliveryId; a JSON body may be null, a string or a number';

/** A key function's answer that no delivery can fix: the route's (see `keyText`). */
export const INVALID_KEY = Symbol('invalid idempotency key');
export const KEY_TYPE_FIX =
  'the @WebhookIdempotencyKey function returned neither a string nor a whole number JSON reads exactly: return the delivery id as text ' +
  '(an id past 2^53 loses digits in JSON.parse, and two such ids could share a key: read it from the raw body as text)';

/**
 * A key as text: a string as it is, a whole number (a partner's numeric `deliveryId`) as its
 * digits; `undefined` when there is none (the sender's fault: 400); `INVALID_KEY` for anything
 * else (an object, a fraction: the key function's fault, 500).
 */
export function keyText(key: unknown): string | undefined | typeof INVALID_KEY {
  if (typeof key === 'string') return key;
  if (key === undefined || key === null) return undefined;
  if ((typeof key === 'number' && Number.isSafeInteger(key)) || typeof key === 'bigint') return String(key);
  return INVALID_KEY;
}

/** The fix of the interceptor on a handler that is not an HTTP route (a resolver, a message handler). */
export function notHttpFix(type: string): string {
  return `PaymentWebhookIdempotencyInterceptor runs on HTTP routes only, and this one is a '${type}' handler: list it on the HTTP route that receives the deliveries`;
}
