import type { ExecutionContext, LoggerService } from '@nestjs/common';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import { WebhookRouteMisconfiguredError } from './payment-webhook.errors.js';

// A route of the app's own (or a building block placed where it cannot work) is told apart by its
// name from the code, and its fix said once: every delivery reaches it.

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
