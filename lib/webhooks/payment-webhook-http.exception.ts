import { type ExecutionContext, HttpException, type LoggerService } from '@nestjs/common';
import {
  PaymentWebhookError,
  type PaymentWebhookErrorBody,
  WebhookInternalError,
  WebhookRouteMisconfiguredError,
  WebhookStoreUnavailableResponseError,
} from './payment-webhook.errors.js';

/**
 * A `PaymentWebhookError` as a Nest `HttpException`, so the JSON body
 * `{ statusCode, code, message }` comes out right under any exception filter,
 * including Nest's built-in one on routes where the user reuses our guards.
 * @publicApi
 */
export class PaymentWebhookHttpException extends HttpException {
  constructor(readonly error: PaymentWebhookError) {
    super(error.toResponseBody(), error.httpStatus, { cause: error });
  }

  get code(): string {
    return this.error.code;
  }

  override getResponse(): PaymentWebhookErrorBody {
    return super.getResponse() as PaymentWebhookErrorBody;
  }
}

/**
 * What the route throws for `error`: the module's refusals as they are, anything else as a
 * 500 `WEBHOOK_INTERNAL_ERROR` whose cause it is.
 */
export function toWebhookHttpException(error: unknown): PaymentWebhookHttpException {
  if (error instanceof PaymentWebhookHttpException) return error;
  return new PaymentWebhookHttpException(error instanceof PaymentWebhookError ? error : new WebhookInternalError({ cause: error }));
}

/** 503 `WEBHOOK_STORE_UNAVAILABLE`: the store failed or did not answer in time (or the app is closing); nothing ran, the sender retries. */
export function storeUnavailable(cause: unknown): PaymentWebhookHttpException {
  return new PaymentWebhookHttpException(new WebhookStoreUnavailableResponseError({ cause }));
}

/** Fixes already logged, per logger: a misconfigured route is reached by every delivery. */
const loggedFixes = new WeakMap<object, Set<string>>();

/** The route a context runs, as `Controller.method`: from the code, never from the request. */
export function routeNameOf(context: ExecutionContext): string {
  return `${context.getClass().name}.${handlerMethodName(context.getClass(), context.getHandler())}`;
}

/**
 * The name of the method of `controller` that is `handler`: its property, found on the prototype chain,
 * since a decorator that replaced the method (tracing, auditing) leaves a function of another name or none.
 */
export function handlerMethodName(controller: { prototype?: unknown }, handler: { name: string }): string {
  for (let proto = controller.prototype; proto !== null && typeof proto === 'object' && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name !== 'constructor' && Object.getOwnPropertyDescriptor(proto, name)?.value === handler) return name;
    }
  }
  return handler.name;
}

/**
 * What a route of the app's own that cannot work answers: 500 `WEBHOOK_ROUTE_MISCONFIGURED`
 * (the sender retries once it is fixed), with `fix` logged at `error` once per logger and route.
 * The route's name is logged and kept on the error (for the app's filters), never answered.
 * `kind` names a fix that quotes the request (a tenant name): logged once per route and kind.
 */
export function routeMisconfigured(logger: LoggerService, fix: string, route?: string, cause?: unknown, kind?: string): PaymentWebhookHttpException {
  const line = logRouteFixOnce(logger, fix, route, kind);
  return new PaymentWebhookHttpException(new WebhookRouteMisconfiguredError(line, cause === undefined ? undefined : { cause }));
}

/**
 * Logs `fix` (prefixed with `route`) at `error`, once per logger and line, or per route and
 * `kind` when given (so what a request brings never grows the set, nor floods `error`); returns the line.
 */
export function logRouteFixOnce(logger: LoggerService, fix: string, route?: string, kind?: string): string {
  const line = route === undefined ? fix : `${route}: ${fix}`;
  const once = kind === undefined ? line : `${route ?? ''} ${kind}`;
  let logged = loggedFixes.get(logger);
  if (logged === undefined) loggedFixes.set(logger, (logged = new Set()));
  if (!logged.has(once)) {
    logged.add(once);
    logger.error(line);
  }
  return line;
}
