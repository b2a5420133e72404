import http from 'node:http';
import https from 'node:https';
import { inspect, type InspectOptions } from 'node:util';
import axios, { type AxiosInstance, type AxiosResponse } from 'axios';
import { PendingWork } from '../common/pending-work.util.js';
import { PaymentClientErrorCode, PaymentNetworkError, type PaymentNetworkFailure, unreadSuccessError } from './payment-api.errors.js';
import { inspectSummary } from '../common/inspect-summary.util.js';

export interface HttpAttempt {
  method: string;
  /** Path under the API base, already filled in and encoded. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** The body, already written (see `PaymentRequestExecutor`): JSON unless `form`. */
  body?: string;
  /** The body is `application/x-www-form-urlencoded`. */
  form?: boolean;
  bearerToken?: string;
  /** Extra headers (never logged, never copied into errors). */
  headers?: Record<string, string>;
}

export interface HttpAnswer {
  status: number;
  body: unknown;
  retryAfterSeconds: number | undefined;
  /**
   * What the answer said its body is: `json` (`application/json`, `…+json`; axios parses any
   * text that reads as JSON, whatever it says), `other` (a `text/html` page), `none` (no `Content-Type`).
   */
  mediaType: 'json' | 'other' | 'none';
}

// Failures raised before a single byte of the request could reach the service, unless the socket
// says they came later: an ICMP "unreachable" on a kept-alive connection ends a read or write
// (`syscall`) after the request was sent, with the same code.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
const AFTER_CONNECT_SYSCALLS = new Set(['read', 'write', 'writev']);
/** axios refusing the request before it opened one (bad URL, option or body): nothing left the process. */
const REFUSED_BEFORE_SENDING_CODES = new Set(['ERR_BAD_REQUEST', 'ERR_INVALID_URL', 'ERR_BAD_OPTION', 'ERR_BAD_OPTION_VALUE', 'ERR_NOT_SUPPORT']);
const TIMEOUT_CODES = new Set(['ECONNABORTED', 'ETIMEDOUT']);
const IDLE_SOCKET_TIMEOUT_MS = 4_000;
const JSON_MEDIA_TYPE = /^\s*application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
// No payload of the service is near this; a bigger answer is not the service's.
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

function mediaTypeOf(contentType: unknown): HttpAnswer['mediaType'] {
  const text = contentType === undefined || contentType === null ? '' : String(contentType);
  if (text.trim() === '') return 'none';
  return JSON_MEDIA_TYPE.test(text) ? 'json' : 'other';
}

/**
 * One HTTP attempt to the service. Owns the axios instance and ONE keep-alive agent
 * pair; retries, tokens and limits live in the request executor above it. Answers of
 * any status come back as `HttpAnswer`; only transport failures throw, as a
 * `PaymentNetworkError` built from scratch: axios errors hold the request config with
 * its Authorization header, so they are never passed on.
 */
export class PaymentHttpClient {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly axios: AxiosInstance;
  /** Attempts on the wire: `close()` lets them end (each within its time-out) before closing the sockets. */
  private readonly inFlight = new PendingWork();

  constructor(
    private readonly apiBaseUrl: string,
    private readonly timeoutMs: number,
  ) {
    // Idle sockets are dropped after 4 s (or the server's Keep-Alive hint minus 1 s, which
    // Node applies itself) so a request is rarely written to a socket the server is closing:
    // for a refund or payout that race would surface as a reset "that may have reached".
    const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_TIMEOUT_MS };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.axios = axios.create({
      baseURL: apiBaseUrl,
      timeout: timeoutMs,
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      // a redirect could carry the bearer token elsewhere
      maxRedirects: 0,
      // proxies from env would see the token; an app that needs one can use a custom agent later
      proxy: false,
      validateStatus: () => true,
      maxContentLength: MAX_RESPONSE_BYTES,
      transitional: { clarifyTimeoutError: true, silentJSONParsing: true },
      // the body is JSON text already (written once per call); axios's default would parse it again on every attempt
      transformRequest: [(data: string | undefined) => data],
      headers: { Accept: 'application/json' },
    });
  }

  send(attempt: HttpAttempt): Promise<HttpAnswer> {
    const sending = this.sendOnce(attempt);
    this.inFlight.track(sending);
    return sending;
  }

  private async sendOnce(attempt: HttpAttempt): Promise<HttpAnswer> {
    const headers: Record<string, string> = { ...attempt.headers };
    if (attempt.bearerToken) headers.Authorization = `Bearer ${attempt.bearerToken}`;
    if (attempt.body !== undefined) headers['Content-Type'] = attempt.form ? 'application/x-www-form-urlencoded' : 'application/json';
    // axios's `timeout` is a wall clock only until the socket opens; after that it is Node's
    // idle timer, which every byte restarts, so an answer trickling in would never time out
    // (and a refund on the wire is not cut by the caller's signal). This bounds the attempt.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.timeoutMs);
    let response: AxiosResponse;
    try {
      response = await this.axios.request({
        method: attempt.method,
        // the query written here: axios's params serializer costs more than the rest of the call's own work
        url: attempt.query === undefined ? attempt.path : withQuery(attempt.path, attempt.query),
        data: attempt.body,
        headers,
        signal: deadline.signal,
      });
    } catch (error) {
      // the status line came, the body did not (a reset mid-body, a broken gzip stream, a body
      // over axios's size limit, or one still trickling in at the deadline: some of axios's
      // errors carry no response, but the request has the one that began)
      const failed = error as { response?: { status?: unknown }; request?: { res?: { statusCode?: unknown } } } | undefined;
      const answered = (deadline.signal.aborted ? undefined : failed?.response?.status) ?? failed?.request?.res?.statusCode;
      throw networkErrorFrom(deadline.signal.aborted ? { code: 'ETIMEDOUT' } : error, attempt.method, attempt.path, typeof answered === 'number' ? answered : undefined);
    } finally {
      clearTimeout(timer);
    }
    return {
      status: response.status,
      body: response.data,
      retryAfterSeconds: parseRetryAfter(response.headers['retry-after']),
      mediaType: mediaTypeOf(response.headers['content-type']),
    };
  }

  /**
   * Base URL and time-out only: the agents' sockets hold the requests in flight, whose
   * headers carry the bearer token.
   */
  toJSON(): Record<string, unknown> {
    return { apiBaseUrl: this.apiBaseUrl, timeoutMs: this.timeoutMs };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentHttpClient', this.toJSON(), depth, options);
  }

  /** Attempts on the wire now (sent, their answer not yet read). */
  get requestsOnTheWire(): number {
    return this.inFlight.size;
  }

  /**
   * Closes the pooled sockets (module shutdown) once the attempts on the wire have ended, each
   * within `timeoutMs`: destroying a socket under a refund would leave the caller unsure whether
   * the service acted on it. Callers stop new attempts first.
   */
  async close(): Promise<void> {
    await this.inFlight.settled();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/**
 * `path?k=v&...` with keys and values percent-encoded (RFC 3986); `undefined` values left out.
 * Anything but an object of strings, numbers and booleans is refused as axios refuses a bad
 * option: before a connection is opened.
 */
function withQuery(path: string, query: Record<string, string | number | boolean | undefined>): string {
  if (typeof query !== 'object' || query === null) throw Object.assign(new TypeError('query must be an object'), { code: 'ERR_BAD_OPTION_VALUE' });
  let search = '';
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (value === undefined) continue;
    search += `${search === '' ? '?' : '&'}${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`;
  }
  return path + search;
}

/** The system call a socket error came from (axios keeps Node's error as its `cause`); '' when unknown. */
function syscallOf(error: unknown): string {
  for (const candidate of [error, (error as { cause?: unknown } | null | undefined)?.cause]) {
    const syscall = (candidate as { syscall?: unknown } | null | undefined)?.syscall;
    if (typeof syscall === 'string') return syscall;
  }
  return '';
}

/**
 * The attempt's failure without an answer to read. `answeredStatus` is the status of an answer
 * whose body could not be read: the request surely reached the service, and a 2xx means it acted.
 * @internal exported for tests
 */
export function networkErrorFrom(error: unknown, method: string, path: string, answeredStatus?: number): PaymentNetworkError {
  const code = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : undefined;
  let failure: PaymentNetworkFailure;
  let mayHaveReachedService = true;
  if (code && TIMEOUT_CODES.has(code)) failure = 'timeout';
  else if (code === 'ECONNREFUSED') failure = 'connection-refused';
  else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') failure = 'dns';
  else if (code === 'ECONNRESET' || code === 'EPIPE') failure = 'connection-reset';
  else failure = 'other';
  if (code && NOT_SENT_CODES.has(code) && !AFTER_CONNECT_SYSCALLS.has(syscallOf(error))) mayHaveReachedService = false;
  // a body that failed mid-stream carries its request; one refused up front has none
  if (code && REFUSED_BEFORE_SENDING_CODES.has(code) && !(error as { request?: unknown }).request) mayHaveReachedService = false;
  if (answeredStatus !== undefined) {
    return unreadSuccessError(method, path, answeredStatus, `its body could not be read (${code ?? 'unknown network error'})`, failure);
  }
  const what = failure === 'timeout' ? 'timed out' : `failed without an answer (${code ?? 'unknown network error'})`;
  return new PaymentNetworkError({
    code: failure === 'timeout' ? PaymentClientErrorCode.TIMEOUT : PaymentClientErrorCode.NETWORK_ERROR,
    message:
      `${method} ${path} ${what}; ` +
      (mayHaveReachedService ? 'the service may have received it' : 'the request never reached the service'),
    method,
    path,
    mayHaveReachedService,
    failure,
  });
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** The HTTP-date forms (RFC 9110 5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime ones a recipient must take. */
const HTTP_DATE = new RegExp(
  `^(?:${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT|${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4})$`,
);

const RFC850_YEAR = /-(\d{2}) /;

/**
 * An RFC 850 date with its two-digit year written out: the latest year with those digits that is not
 * more than 50 years ahead of `now` (RFC 9110 5.6.7); `Date.parse` reads 50–99 as 19xx whatever the date.
 * The other forms are returned as they are.
 */
function withFullYear(httpDate: string, now: number): string {
  const match = RFC850_YEAR.exec(httpDate);
  if (match === null) return httpDate;
  const thisYear = new Date(now).getUTCFullYear();
  let year = thisYear - (thisYear % 100) + Number(match[1]);
  if (year > thisYear + 50) year -= 100;
  else if (year + 100 <= thisYear + 50) year += 100; // late in a century: '00' is the next one's
  return httpDate.replace(RFC850_YEAR, `-${year} `);
}

/**
 * `Retry-After` as whole seconds: delta-seconds or an HTTP date. A fraction (`1.5`, not HTTP
 * but seen from proxies) is rounded up: a wait is never cut short. Anything else is unreadable
 * (backed off like a 5xx): `Date.parse` alone reads text such as `in 2030` as a date decades away.
 */
export function parseRetryAfter(value: unknown, now = Date.now()): number | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const trimmed = value.trim();
  // hundreds of digits are Infinity, which toJSON() would write as null
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.min(Math.ceil(Number(trimmed)), Number.MAX_SAFE_INTEGER);
  if (!HTTP_DATE.test(trimmed)) return undefined;
  // asctime has no zone: HTTP dates are GMT
  const date = Date.parse(trimmed.endsWith('GMT') ? withFullYear(trimmed, now) : `${trimmed} GMT`);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}
