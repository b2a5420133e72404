import { parse as parseLegacyUrl } from 'node:url';
import { HttpException, type HttpServer, type VersioningOptions, VersioningType } from '@nestjs/common';
import { isRecord } from '../common/is-record.util.js';
import { PAYMENT_WEBHOOK_PARSER_REFUSED } from '../payment.constants.js';
import {
  PaymentWebhookErrorCode,
  type PaymentWebhookErrorBody,
  webhookErrorCodeForStatus,
  WebhookUnsupportedMediaTypeError,
} from './payment-webhook.errors.js';
import { parseWebhookJson } from './payment-webhook-envelope.js';
import { assertJsonContentType, type PaymentWebhookRequest, rawBodyOf } from './payment-webhook.request.js';
import type { WebhookRouteVersion } from './webhook-route-paths.js';

/*
 * Body parsing runs before Nest's routing: on Express the JSON parser is a middleware whose
 * errors (broken JSON, body over its limit) skip route-scoped filters, and on Fastify the
 * content-type parser's errors go to the instance's error handler. Neither would carry a
 * `code`. These adapter-level hooks give such errors on the webhook path the same
 * `{ statusCode, code, message }` body as every other webhook error, and leave every other
 * path of the host app alone.
 */

interface BodyParserError {
  type?: string;
  status?: number;
  statusCode?: number;
  code?: string;
}

/** How the router compares paths: Express's `case sensitive routing` and `strict routing` settings. */
export interface WebhookPathMatching {
  /** The router matches paths whatever their case (Express's default). */
  ignoreCase?: boolean;
  /** One trailing slash still matches (Express's non-strict default, Fastify's `ignoreTrailingSlash`). */
  trailingSlash?: boolean;
}

/**
 * True when `urlPath` (no query) is one of `routePaths`, the paths Nest serves the webhook route
 * at (see `webhookRoutePaths`), compared as the router compares them. A host route that merely
 * ends the same way (`/legacy/payments/webhook`) is the host's.
 */
function isWebhookPath(urlPath: string, routePaths: readonly string[], matching: WebhookPathMatching = {}): boolean {
  const { ignoreCase = false, trailingSlash = true } = matching;
  const end = trailingSlash && urlPath.length > 1 && urlPath.endsWith('/') ? urlPath.length - 1 : urlPath.length;
  const p = ignoreCase ? urlPath.slice(0, end).toLowerCase() : urlPath.slice(0, end);
  return routePaths.some((route) => {
    const r = ignoreCase ? route.toLowerCase() : route;
    return p === r || (r.includes('/:') && matchesParams(p, r));
  });
}

/** A route with parameters (a RouterModule path `tenants/:tenant`): a `:name` segment matches any one segment. */
function matchesParams(urlPath: string, route: string): boolean {
  const given = urlPath.split('/');
  const wanted = route.split('/');
  return given.length === wanted.length && wanted.every((segment, i) => (segment.startsWith(':') ? given[i] !== '' : segment === given[i]));
}

/**
 * Characters after which Express's router (through parseurl) reads a target with Node's legacy URL
 * parser instead of its fast path: that parser drops a `#` fragment, turns `\` into `/` and trims.
 */
const LEGACY_PARSED_TARGET = /[\t\n\f\r #\u00a0\ufeff]/;

/**
 * The path of a request target, as Express's router reads it: the legacy URL parser's `pathname`
 * for a target that does not start with `/` (absolute-form, `POST http://host/path`, as a proxy
 * sends it) or holds one of `LEGACY_PARSED_TARGET` (a module in node_modules gets no deprecation
 * warning from it), else the target up to its query.
 */
function pathOf(url: string | undefined): string {
  if (!url) return '/';
  if (!url.startsWith('/') || LEGACY_PARSED_TARGET.test(url)) return parseLegacyUrl(url).pathname ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** The `type` of every error Express's body parser (body-parser, raw-body) raises. */
const EXPRESS_PARSER_ERROR_TYPE = /^(?:entity|encoding|charset|request|stream)\.|^parameters\.too\.many$|^querystring\./;

/**
 * Whether `error` is the body parser's: one it names by `type`, or a decompression error it passes
 * on as it is (zlib's, with an `errno`, for a `Content-Encoding` body that does not inflate). Any
 * other error on the path is a host middleware's (an IP allow-list's 403): its own answer, not counted.
 */
function isExpressParserError(error: BodyParserError & { errno?: unknown }): boolean {
  if (typeof error?.type === 'string') return EXPRESS_PARSER_ERROR_TYPE.test(error.type);
  return typeof error?.errno === 'number' && typeof error.code === 'string';
}

/** Body of an Express body-parser error, or `undefined` when it is not a client error of the parser. */
function bodyParserErrorBody(error: BodyParserError): PaymentWebhookErrorBody | undefined {
  const status = error.status ?? error.statusCode;
  switch (error.type) {
    case 'entity.too.large':
      return { statusCode: 413, code: PaymentWebhookErrorCode.BODY_TOO_LARGE, message: 'The webhook body is larger than the JSON body parser accepts' };
    case 'entity.parse.failed':
      return { statusCode: 400, code: PaymentWebhookErrorCode.INVALID_JSON, message: 'The webhook body is not valid JSON' };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { statusCode: 415, code: PaymentWebhookErrorCode.UNSUPPORTED_MEDIA_TYPE, message: 'The webhook body encoding or charset is not supported' };
    default:
      if (typeof status === 'number' && status >= 400 && status < 500) {
        return { statusCode: status, code: webhookErrorCodeForStatus(status), message: 'The webhook request could not be read' };
      }
      return undefined;
  }
}

/**
 * The route's own 415 for a content type it refuses, when the parser failed on such a body
 * first: Express's JSON parser decodes any `utf-*` charset (UTF-8 bytes read as UTF-16 fail as
 * JSON), while the route and Fastify refuse every charset but UTF-8.
 */
function mediaTypeRefusal(req: PaymentWebhookRequest): PaymentWebhookErrorBody | undefined {
  try {
    assertJsonContentType(req.headers);
    return undefined;
  } catch (error) {
    return error instanceof WebhookUnsupportedMediaTypeError ? error.toResponseBody() : undefined;
  }
}

/** Whether a request the parser refused is one the router sends to the route. */
type WebhookRequestTest = (urlPath: string, request: unknown) => boolean;

/** What the adapter-level hooks are told and asked about the route's requests. */
export interface WebhookBodyRefusalHooks {
  /**
   * Told of each webhook request the parser refused (the request, with the raw body the parser
   * kept if any, and the answer), so it is counted and logged like every other refusal.
   */
  onRefused?: (request: PaymentWebhookRequest, answer: PaymentWebhookErrorBody) => void;
  /** The route's own refusal of a request (its checks run on the raw body), `undefined` when it would pass them. */
  routeRefusal?: (request: PaymentWebhookRequest) => PaymentWebhookErrorBody | undefined;
}

/**
 * The route's own answer where one parser refuses what the other passes on, so both adapters
 * answer alike: a body that is JSON after all (a top-level `"text"` or `42`, which Express's
 * strict parser refuses and Fastify's hands on), or an empty one (which Fastify's refuses and
 * Express's hands on as `{}`). The route checks the signature, then finds no JSON object.
 */
function routeAnswerOf(request: PaymentWebhookRequest, hooks: WebhookBodyRefusalHooks, empty: boolean): PaymentWebhookErrorBody | undefined {
  const raw = rawBodyOf(request);
  if (raw === undefined || hooks.routeRefusal === undefined || (raw.length === 0) !== empty) return undefined;
  if (!empty) {
    try {
      parseWebhookJson(raw);
    } catch {
      return undefined; // not JSON: the parser's answer is the route's
    }
  }
  return hooks.routeRefusal(request);
}

/** What tells one account's webhook route apart under the router, read at init (the host's prefix and versioning set, the routes mapped). */
export interface WebhookRouteMatch {
  account: string;
  /** The paths Nest serves it at (`webhookRoutePaths`). */
  paths: readonly string[];
  /** The route's version metadata and the app's versioning, when any. */
  version?: WebhookRouteVersion;
  versioning?: VersioningOptions;
}

/** Nest's key of a Fastify route's `config` (`@RouteConfig()` of @nestjs/platform-fastify; the same on Nest 11 and 12). */
const FASTIFY_ROUTE_CONFIG_METADATA = '__fastify_route_config__';
/** The field of the module route's Fastify `config` that names its account. */
const WEBHOOK_ROUTE_ACCOUNT_FIELD = 'paymentGatewayWebhookAccount';

/**
 * Marks `handler`'s Fastify route as `account`'s webhook route, beside a host's own
 * `RouteConfig` (Express ignores it): a parser refusal then knows the router chose this route,
 * whatever the path, version or constraint that chose it.
 */
export function markWebhookRoute(handler: object, account: string): void {
  const config: unknown = Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, handler);
  Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { ...(isRecord(config) ? config : {}), [WEBHOOK_ROUTE_ACCOUNT_FIELD]: account }, handler);
}

/**
 * Installs the adapter-level error shaping for the webhook route (Express or Fastify; others
 * untouched).
 */
export function installWebhookBodyErrorHandler(adapter: HttpServer, route: WebhookRouteMatch, hooks: WebhookBodyRefusalHooks = {}): void {
  const type = (adapter as { getType?: () => string }).getType?.();
  if (type === 'express') {
    // The router's own flags (it took `case sensitive routing` and `strict routing` from the
    // app's settings when it was created), so paths are compared as the route itself is matched.
    const app = adapter.getInstance() as { router?: { caseSensitive?: boolean; strict?: boolean } };
    const matching = { ignoreCase: app.router?.caseSensitive !== true, trailingSlash: app.router?.strict !== true };
    const routedByVersion = versionFilterOf(adapter, route);
    const isWebhook: WebhookRequestTest = (urlPath, request) => isWebhookPath(urlPath, route.paths, matching) && routedByVersion(request);
    installExpress(adapter, isWebhook, hooks);
  } else if (type === 'fastify') {
    installFastify(adapter, route.account, hooks);
  }
}

/**
 * Whether Nest's version filter of the route lets a request through (header, media type or
 * custom versioning: Express parses the body before it routes, so the router's choice is
 * asked of Nest's own filter, not guessed). Always true without such versioning.
 */
function versionFilterOf(adapter: HttpServer, route: WebhookRouteMatch): (request: unknown) => boolean {
  const { version, versioning } = route;
  if (version === undefined || versioning === undefined || versioning.type === VersioningType.URI) return () => true;
  let passed = false;
  // the metadata as Nest read it when it mapped the route (VERSION_NEUTRAL is a symbol Nest passes on too)
  const filter = adapter.applyVersionFilter(() => (passed = true), version as Parameters<HttpServer['applyVersionFilter']>[1], versioning) as (request: unknown, response: unknown, next: () => void) => unknown;
  return (request) => {
    passed = false;
    try {
      filter(request, undefined, () => undefined);
    } catch {
      return false; // a host's version extractor that throws: Nest answers that request itself
    }
    return passed;
  };
}

function installExpress(adapter: HttpServer, isWebhook: WebhookRequestTest, hooks: WebhookBodyRefusalHooks): void {
  // A 4-argument function is an Express error handler. Installed in onModuleInit, i.e. before
  // Nest adds its own error handler, so parser errors on the webhook path reach this one first.
  // It passes them on as an HttpException with the webhook body: Nest's handler answers it
  // as it is, or the host's global exception filter gets it like any other rejection.
  // Only the route's own requests (POST): another method on the path is the host's. The path as
  // this app's router reads it (`req.url`): under `outer.use('/svc', nestApp)` the original URL has `/svc` too.
  const handler = (error: BodyParserError, req: PaymentWebhookRequest & { url?: string; originalUrl?: string; method?: string }, _res: unknown, next: (e?: unknown) => void): void => {
    const ours = req.method === 'POST' && isExpressParserError(error) && isWebhook(pathOf(req.url ?? req.originalUrl), req);
    const parseFailed = ours && error.type === 'entity.parse.failed';
    const body = ours ? (mediaTypeRefusal(req) ?? (parseFailed ? routeAnswerOf(req, hooks, false) : undefined) ?? bodyParserErrorBody(error)) : undefined;
    if (body === undefined) {
      next(error);
      return;
    }
    hooks.onRefused?.(req, body);
    next(new HttpException(body, body.statusCode, { cause: error }));
  };
  adapter.getInstance().use(handler);
}

/** Statuses a Fastify content-type parser can produce. */
const PARSER_STATUSES = new Set([400, 413, 415]);

/** The message of Nest's default answer to an error it does not know. */
const NEST_INTERNAL_ERROR = 'Internal server error';

/** The keys of the body Nest's default exception handling writes. */
const NEST_ERROR_BODY_KEYS: ReadonlySet<string> = new Set(['statusCode', 'message', 'error']);

/** Whether `body` is the one Nest's default exception handling writes for an answer of `status`. */
function isNestDefaultErrorBody(body: unknown, status: number): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const { statusCode, message } = body as { statusCode?: unknown; message?: unknown };
  return statusCode === status && typeof message === 'string' && Object.keys(body).every((key) => NEST_ERROR_BODY_KEYS.has(key));
}

/** The Express parser error type of the same refusal, so both adapters answer with the same words. */
const EXPRESS_TYPE_OF_FASTIFY_STATUS: Readonly<Record<number, string>> = { 413: 'entity.too.large' };

/**
 * The webhook body of a Fastify parser refusal: the one Express gets for the same refusal
 * (`WEBHOOK_INVALID_JSON` for JSON errors), in the module's words, never Fastify's (its JSON
 * error quotes the unverified body).
 */
function fastifyParserBody(request: PaymentWebhookRequest, error: { statusCode: number; message?: unknown; code?: unknown }, hooks: WebhookBodyRefusalHooks): PaymentWebhookErrorBody {
  const { statusCode: status, message } = error;
  // A charset the route refuses is a 415 whatever the parser stumbled on first (Fastify reads a
  // latin1 or utf-16 body as UTF-8), as on Express; Fastify's own 415 is a type it has no parser for
  const refusal = mediaTypeRefusal(request) ?? (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? routeAnswerOf(request, hooks, true) : undefined);
  if (refusal !== undefined) return refusal;
  if (error.code === COMPRESS_UNSUPPORTED_ENCODING) return bodyParserErrorBody({ type: 'encoding.unsupported' })!;
  if (status === 415) return new WebhookUnsupportedMediaTypeError().toResponseBody();
  const json = status === 400 && typeof message === 'string' && /json/i.test(message);
  return bodyParserErrorBody({ type: json ? 'entity.parse.failed' : EXPRESS_TYPE_OF_FASTIFY_STATUS[status], status })!;
}

/** @fastify/compress's refusal of a request `Content-Encoding` it cannot inflate (415). */
const COMPRESS_UNSUPPORTED_ENCODING = 'FST_CP_ERR_INVALID_CONTENT_ENCODING';

/**
 * Whether `error` is the body parser's: Fastify's own (`FST_ERR_CTP_*`: body too large, empty,
 * a type without a parser), the JSON parser's `SyntaxError`, or @fastify/compress's request
 * decompression (`FST_CP_ERR_*`: an encoding it does not inflate, a body that does not inflate),
 * which does what Express's parser does there. A host hook's 400 on the route (`onRequest`,
 * `preHandler`) is the host's answer, not counted as the module's refusal.
 */
function isFastifyParserError(error: { code?: unknown }): boolean {
  if (typeof error.code !== 'string') return (error as { name?: unknown }).name === 'SyntaxError';
  return error.code.startsWith('FST_ERR_CTP_') || error.code.startsWith('FST_CP_ERR_');
}

function installFastify(adapter: HttpServer, account: string, hooks: WebhookBodyRefusalHooks): void {
  const instance = adapter.getInstance();
  // Errors raised before the handler (content-type parser: 400/413/415) are answered by the
  // instance's error handler without a code; add it on the way out, for this path only. Only
  // those: an answer a host exception filter wrote (sent as a body, not as an error, so no
  // onError hook runs) is the host's and stays as it is.
  type FastifyRequest = PaymentWebhookRequest & {
    method?: string;
    /** The route the router matched (Fastify 5), with its `config` (see `markWebhookRoute`). */
    routeOptions?: { config?: Record<string, unknown> };
    [PAYMENT_WEBHOOK_PARSER_REFUSED]?: { status: number; message: unknown; body: PaymentWebhookErrorBody; compress: boolean };
  };
  // The router's decision, not the URL's text: the route it matched is the webhook's (its path
  // under the router's options, its version), and a request it sends elsewhere (a 404, a host
  // route of the same path and another version) is not, however alike they look.
  const isWebhookRoute = (request: FastifyRequest): boolean =>
    request.method === 'POST' && request.routeOptions?.config?.[WEBHOOK_ROUTE_ACCOUNT_FIELD] === account;
  instance.addHook('onError', (request: FastifyRequest, _reply: unknown, error: { statusCode?: unknown; message?: unknown; code?: unknown }, done: () => void) => {
    const status = error?.statusCode;
    if (typeof status === 'number' && PARSER_STATUSES.has(status) && isFastifyParserError(error) && isWebhookRoute(request)) {
      const body = fastifyParserBody(request, { statusCode: status, message: error.message, code: error.code }, hooks);
      // what Nest's default handling answers for it, recognised on the way out (onSend)
      request[PAYMENT_WEBHOOK_PARSER_REFUSED] = { status, message: error.message, body, compress: String(error.code).startsWith('FST_CP_ERR_') };
      hooks.onRefused?.(request, body);
    }
    done();
  });
  instance.addHook('onSend', (request: FastifyRequest, reply: { statusCode: number; code(status: number): unknown }, payload: unknown, done: (e: null, p: unknown) => void) => {
    const refused = request[PAYMENT_WEBHOOK_PARSER_REFUSED];
    // Nest answers its default 500 to an error it cannot map to its status (some of
    // @fastify/compress's, named FastifyCompressError rather than FastifyError)
    const unmapped = reply.statusCode === 500 && refused?.compress === true;
    if (refused === undefined || (reply.statusCode !== refused.status && !unmapped) || typeof payload !== 'string') {
      done(null, payload);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload);
    } catch {
      done(null, payload);
      return;
    }
    // Nest's default answer of the parser's error only (its status, its message, nothing else):
    // a host filter's answer stays the host's, its own shape, status or words alike
    const [status, message] = unmapped ? [500, NEST_INTERNAL_ERROR] : [refused.status, refused.message];
    if (!isNestDefaultErrorBody(parsed, status) || (parsed as { message: string }).message !== message) {
      done(null, payload);
      return;
    }
    reply.code(refused.body.statusCode);
    done(null, JSON.stringify(refused.body));
  });
}
