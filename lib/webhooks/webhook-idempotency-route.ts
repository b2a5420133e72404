import { HttpException } from '@nestjs/common';
import { INTERCEPTORS_METADATA, RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';

// What `PaymentWebhookIdempotencyInterceptor` reads of the route it runs on, and the fixes it names.

/** Whether the handler answers through `@Res()`/`@Next()` itself (Nest's own test: such a parameter, and no `passthrough`). */
export function routeAnswersByItself(controller: object, handler: { name: string }): boolean {
  const args: Record<string, unknown> = Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler.name) ?? {};
  const handled = Object.keys(args).some((key) => key.startsWith(`${RouteParamtypes.RESPONSE}:`) || key.startsWith(`${RouteParamtypes.NEXT}:`));
  return handled && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, controller, handler.name) !== true;
}

export const RESPONSE_HANDLED_FIX =
  'the handler takes @Res() (or @Next()) without passthrough, so Nest sends nothing the interceptor returns and every copy of a handled event ' +
  'would wait for an answer: use @Res({ passthrough: true }) and return the body';

/**
 * Whether the route lists an interceptor that runs inside `interceptor` (between it and the handler).
 * Nest runs global interceptors, then the class's, then the method's, each list in order: `interceptor`
 * is innermost when it is the last of the method's (of the class's when the method has none; a
 * global one when the route has neither).
 */
export function runsInterceptorsInside(interceptor: object, controller: object, handler: object): boolean {
  const own: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? [];
  const list = own.length > 0 ? own : ((Reflect.getMetadata(INTERCEPTORS_METADATA, controller) as unknown[] | undefined) ?? []);
  const last = list.at(-1);
  return last !== undefined && last !== interceptor && !(typeof last === 'function' && interceptor instanceof last);
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
