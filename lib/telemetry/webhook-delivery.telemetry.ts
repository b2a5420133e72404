import type { LoggerService } from '@nestjs/common';
import { type Attributes, context, INVALID_SPAN_CONTEXT, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { paymentEnvName } from '../config/payment-env.js';
import { withoutUrlCredentials } from '../common/error-message.util.js';
import { redactRedisUrlIn } from '../config/redact-url.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { PaymentWebhookHttpException } from '../webhooks/payment-webhook-http.exception.js';
import { PaymentWebhookErrorCode, WebhookInvalidEnvelopeError } from '../webhooks/payment-webhook.errors.js';
import { clientErrorSummary } from './client-error-summary.js';
import { paymentTelemetry } from './payment-telemetry.js';
import { metricEventType, PaymentSpanAttribute, type PaymentWebhookOutcome } from './payment-telemetry.names.js';
import { endSpan } from './payment-handler.tracing.js';
import { RepeatableLogLines } from './repeatable-log-lines.js';
import { telemetryFailed } from './telemetry-fault.js';

/** Outcome of a non-2xx answer to a verified event, by its code. */
const OUTCOME_BY_CODE: Readonly<Record<string, PaymentWebhookOutcome>> = {
  [PaymentWebhookErrorCode.EVENT_IN_FLIGHT]: 'in_flight',
  [PaymentWebhookErrorCode.STORE_UNAVAILABLE]: 'unavailable',
  [PaymentWebhookErrorCode.RECONCILIATION_FAILED]: 'unavailable',
  [PaymentWebhookErrorCode.QUEUE_UNAVAILABLE]: 'unavailable',
  [PaymentWebhookErrorCode.HANDLER_FAILED]: 'failed',
};

/** Rejections that only a body signed with a configured secret can cause: the sender is the service. */
const SIGNED_BODY_CODES: ReadonlySet<string> = new Set([PaymentWebhookErrorCode.INVALID_JSON, PaymentWebhookErrorCode.INVALID_ENVELOPE]);

/** What a body-parser refusal means, by its answer's code. */
const PARSER_REFUSALS: Readonly<Record<string, string>> = {
  [PaymentWebhookErrorCode.INVALID_JSON]: 'not valid JSON',
  [PaymentWebhookErrorCode.BODY_TOO_LARGE]: "larger than the parser's limit",
  [PaymentWebhookErrorCode.UNSUPPORTED_MEDIA_TYPE]: 'an encoding or charset it does not support',
};

/** How often a run of bad signatures (or of signed deliveries outside the replay window) is said at `warn`. */
const REFUSAL_COUNT_WARN_INTERVAL_MS = 3_600_000;

/** 500 refusals of the module's own making (a missing raw body has its own once-only report). */
const OWN_FAULT_CODES: ReadonlySet<string> = new Set([PaymentWebhookErrorCode.SECRET_NOT_CONFIGURED, PaymentWebhookErrorCode.INTERNAL_ERROR]);

type LogLevel = 'debug' | 'warn' | 'error';

/**
 * Metrics, spans and log lines of ONE account's webhook deliveries. The processor tells it
 * the outcome of whichever branch answered; this class turns that into:
 * - one `payment_gateway.webhook.requests` count and one `payment_gateway.webhook.duration`
 *   value per delivery (`outcome`, `code` when not 2xx, `event_type` once verified, `account`);
 * - one `payment webhook <event_type>` span per verified delivery, started in the active
 *   context (so under the host's HTTP span when it has HTTP instrumentation), made active
 *   while the handlers run, ended with the outcome;
 * - one log line per non-2xx answer: `debug` while the request is not trusted (nobody can
 *   flood `warn` by sending garbage), `warn`/`error` once it carries the service's signature
 *   (a `warn` that a replayed capture would repeat: at most 10 a minute per kind);
 *   the first 5xx refusal of an untrusted request (a missing secret) at `error`.
 *
 * With no OpenTelemetry SDK registered nothing is allocated: no attributes, spans or closures.
 * Whatever the SDK throws stays here: the answer is the delivery's, never the telemetry's.
 */
export class WebhookDeliveryTelemetry {
  private serverRejectionLogged = false;
  /** Per counted code (a bad signature, a stale timestamp): refusals since the last line that said so, and when it was said. */
  private readonly refusalCounts = new Map<string, { unsaid: number; saidAt: number }>();
  /** Whether a body-parser 413 was logged at `warn` (once: anyone can send large bodies). */
  private parserLimitLogged = false;
  /** Warnings a replayed capture would repeat: at most 10 a minute per kind at `warn`. */
  private readonly repeatable = new RepeatableLogLines();
  /** Failures of verified events, per code and event id (at most 1,000 ids tracked). */
  private readonly failuresByEvent = new RepeatableLogLines('error', 1000);
  /** Removes the Redis URLs (their passwords) from a logged reason; a closure, so `inspect` never shows them. */
  readonly #redact: (text: string) => string;

  /** @param redisUrls the store's and the queue's Redis URLs, where they exist */
  constructor(
    private readonly account: string,
    private readonly logger: LoggerService,
    redisUrls: ReadonlyArray<string | undefined> = [],
  ) {
    const urls = [...new Set(redisUrls.filter((url): url is string => !!url))];
    // the account's own URLs first (their passwords wherever quoted), then any URL's credentials (a custom store's)
    this.#redact = (text) => withoutUrlCredentials(urls.reduce((out, url) => redactRedisUrlIn(out, url), text));
  }

  /** The tracer when the host registered a TracerProvider; `undefined` means: do not trace. */
  tracer(): Tracer | undefined {
    return paymentTelemetry.tracer();
  }

  /**
   * Runs `work` with a new span for the verified `event` as the active span. The span is
   * ended by `answered` or `failed`, which `work` must call with it.
   */
  traced<T>(tracer: Tracer, event: AnyPaymentEvent, work: (span: Span) => Promise<T>): Promise<T> {
    const parent = context.active();
    let span: Span;
    try {
      span = tracer.startSpan(
        `payment webhook ${metricEventType(event.eventType)}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            [PaymentSpanAttribute.ACCOUNT]: this.account,
            [PaymentSpanAttribute.EVENT_ID]: event.eventId,
            [PaymentSpanAttribute.EVENT_TYPE]: event.eventType,
          },
        },
        parent,
      );
    } catch (error) {
      telemetryFailed(error);
      span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT); // records nothing
    }
    return context.with(trace.setSpan(parent, span), work, undefined, span);
  }

  /**
   * A delivery refused before its event was trusted (the verifier threw). Records it, logs it
   * unless the caller logs it its own way (`log: false`), and returns `error` for the caller to throw.
   */
  rejected<E>(error: E, startedAt: number, log = true): E {
    const { code, status } = answerOf(error);
    this.record('rejected', code, undefined, startedAt);
    // a signed body refused for its envelope: its id and type where they are well formed
    const named = error instanceof PaymentWebhookHttpException && error.error instanceof WebhookInvalidEnvelopeError ? error.error.event : undefined;
    if (log) {
      const { level, note } = this.rejectionLevel(code);
      this.log(level, 'rejected', status, code, named, error, note);
    }
    if (code === PaymentWebhookErrorCode.SIGNATURE_MISMATCH || code === PaymentWebhookErrorCode.TIMESTAMP_OUT_OF_TOLERANCE) this.countRefusal(code);
    return error;
  }

  /**
   * Each refusal of a bad signature, or of a signed delivery outside the replay window, is logged
   * at `debug` (anyone can send the first, and replay a captured delivery for the second), so a
   * wrong secret or a skewed clock would lose the service's events without a word at the usual
   * levels: one `warn` with the count, at the first and then at most once an hour, is no flood and
   * is noticed.
   */
  private countRefusal(code: string): void {
    const count = this.refusalCounts.get(code) ?? { unsaid: 0, saidAt: Number.NEGATIVE_INFINITY };
    this.refusalCounts.set(code, count);
    count.unsaid++;
    const now = Date.now();
    if (now - count.saidAt < REFUSAL_COUNT_WARN_INTERVAL_MS) return;
    const since = `${count.unsaid} ${count.saidAt === Number.NEGATIVE_INFINITY ? 'since start' : 'in the last hour'}; each is logged at debug`;
    this.logger.warn(
      code === PaymentWebhookErrorCode.SIGNATURE_MISMATCH
        ? `Webhook deliveries to account ${this.account} fail the signature check (${since}). ` +
            `If the service sends them, its signing secret is not among those set for the account (option webhookSecret or ${paymentEnvName('webhookSecret', this.account)}); ` +
            'anyone can send such requests, so this is said at most once an hour'
        : `Webhook deliveries to account ${this.account} are signed but outside the replay window (${since}). ` +
            `If the service sends them, this machine's clock or the service's is off (check NTP), or raise webhookToleranceSeconds ` +
            `(${paymentEnvName('webhookToleranceSeconds', this.account)}); a captured delivery sent again later is refused the same way, so this is said at most once an hour`,
    );
    count.saidAt = now;
    count.unsaid = 0;
  }

  /**
   * A delivery the HTTP adapter's body parser refused before the route ran (broken JSON, a
   * body over the parser's limit, an unsupported charset). Counted as rejected, without a
   * duration (the module never saw the request start). Logged at `warn` when the kept body
   * carries a valid signature (a signed event the service will retry, then abandon), and the
   * first parser 413 too (the fix is the host's parser limit); else at `debug`, since anyone
   * can send such requests.
   */
  refusedByBodyParser(status: number, code: string, signed: boolean): void {
    this.record('rejected', code, undefined, undefined);
    let { level, note } = signed ? this.repeatable.level(`parser ${code}`) : { level: 'debug' as LogLevel, note: '' };
    // our words, never the parser's message: a JSON parser quotes the (unverified) body
    let reason = `the body parser refused it (${PARSER_REFUSALS[code] ?? 'the request could not be read'})`;
    if (signed) reason += `; the signature is valid${note}`;
    if (code === PaymentWebhookErrorCode.BODY_TOO_LARGE && !this.parserLimitLogged) {
      this.parserLimitLogged = true;
      level = 'warn';
      reason +=
        "; if the service sends events this large, raise the parser's limit (Express: app.useBodyParser('json', { limit }); Fastify: bodyLimit) " +
        'and webhookMaxBodyBytes (1 MiB by default), which refuses larger bodies too';
    }
    this.log(level, 'rejected', status, code, undefined, new Error(reason));
  }

  /**
   * A refusal that is our side's fault (no secret configured, a bug) must be seen: `error` for
   * the first one, `debug` after it, since anyone can send requests to the route. A signed body
   * refused for its content: `warn` (at most 10 a minute: a replay repeats it).
   */
  private rejectionLevel(code: string): { level: LogLevel; note: string } {
    if (OWN_FAULT_CODES.has(code)) {
      const level = this.serverRejectionLogged ? 'debug' : 'error';
      this.serverRejectionLogged = true;
      return { level, note: '' };
    }
    return SIGNED_BODY_CODES.has(code) ? this.repeatable.level(code) : { level: 'debug', note: '' };
  }

  /** A signed event of the other environment, answered 2xx without dispatching: `warning` logged at `warn` (at most 10 a minute: a replay repeats it). */
  ignoredOtherEnvironment(warning: string): void {
    this.repeatable.say(this.logger, 'environment', warning);
  }

  /** A verified delivery answered 2xx (`handled`, `duplicate`, `queued`). */
  answered(event: AnyPaymentEvent, outcome: PaymentWebhookOutcome, startedAt: number, span?: Span): void {
    this.record(outcome, undefined, event.eventType, startedAt);
    if (span === undefined) return;
    try {
      span.setAttribute(PaymentSpanAttribute.OUTCOME, outcome);
    } catch (error) {
      telemetryFailed(error);
    }
    endSpan(span);
  }

  /** A verified delivery answered non-2xx because `error` was thrown; `error` is rethrown by the caller. */
  failed(event: AnyPaymentEvent, error: unknown, startedAt: number, span?: Span, claimNotReleased?: string): void {
    const { code, status } = answerOf(error);
    const outcome = OUTCOME_BY_CODE[code] ?? 'failed';
    this.record(outcome, code, event.eventType, startedAt);
    // a copy of a running event, a reconciliation read while the service is down: a replay repeats them
    // the rest (a handler failing, the store down) per event: a replay of one capture repeats its line
    const { level, note } = outcome === 'in_flight' || code === PaymentWebhookErrorCode.RECONCILIATION_FAILED ? this.repeatable.level(code) : this.failuresByEvent.level(`${code} ${event.eventId}`);
    // in the delivery's one line: its copies meet the claim (409) until the lease lapses
    const held = claimNotReleased === undefined ? '' : `; its claim could not be released (${this.#redact(claimNotReleased)}): copies are answered 409 until its lease lapses`;
    const reason = this.log(level, outcome, status, code, event, error, held + note);
    if (span === undefined) return;
    try {
      span.setAttribute(PaymentSpanAttribute.OUTCOME, outcome);
      span.setAttribute(PaymentSpanAttribute.CODE, code);
      if (outcome !== 'in_flight') {
        // Our own error, message redacted; never the handler's error object (its span has that).
        // the error's class as the exception type (as client spans have it); the code is an attribute
        span.recordException({ name: exceptionTypeOf(error), message: reason });
        span.setStatus({ code: SpanStatusCode.ERROR, message: `${code}: ${reason}` });
      }
    } catch (failure) {
      telemetryFailed(failure);
    }
    endSpan(span);
  }

  private record(outcome: PaymentWebhookOutcome, code: string | undefined, eventType: string | undefined, startedAt: number | undefined): void {
    const instruments = paymentTelemetry.instruments();
    if (instruments === undefined) return;
    const attributes: Attributes = { outcome, account: this.account };
    if (code !== undefined) attributes.code = code;
    if (eventType !== undefined) attributes.event_type = metricEventType(eventType);
    try {
      instruments.webhookRequests.add(1, attributes);
      if (startedAt !== undefined) instruments.webhookDuration.record((performance.now() - startedAt) / 1000, attributes);
    } catch (error) {
      telemetryFailed(error);
    }
  }

  /** Logs the delivery's one line; returns the reason it gave. */
  private log(
    level: LogLevel,
    outcome: PaymentWebhookOutcome,
    status: number,
    code: string,
    event: { eventId?: string; eventType?: string } | undefined,
    error: unknown,
    more = '',
  ): string {
    const reason = this.reasonOf(error);
    const who = `${event?.eventId === undefined ? '' : `eventId=${event.eventId} `}${event?.eventType === undefined ? '' : `eventType=${event.eventType} `}`;
    const line = `Webhook delivery ${outcome}, answered ${status} ${code}: ${who}account=${this.account}; ${reason}${more}`;
    if (level === 'debug') this.logger.debug?.(line);
    else if (level === 'warn') this.logger.warn(line);
    else this.logger.error(line);
    return reason;
  }

  /**
   * The answer's message and what caused it (e.g. the store's error), without the Redis password;
   * a client error (a failed reconciliation) by its code and status only, never the service's text.
   */
  private reasonOf(error: unknown): string {
    const answer = error instanceof PaymentWebhookHttpException ? error.error : error;
    const parts: string[] = [];
    let current: unknown = answer;
    for (let depth = 0; depth < 3 && current instanceof Error; depth++) {
      const summary = clientErrorSummary(current);
      if (summary !== undefined) {
        parts.push(summary);
        break;
      }
      // a wrapper that already quotes its cause's message ("could not claim: Command timed out") says it once
      if (parts.length === 0 || !parts[parts.length - 1]!.endsWith(current.message)) parts.push(current.message);
      current = current.cause;
    }
    const reason = parts.length > 0 ? parts.join(': ') : String(answer);
    return this.#redact(reason);
  }
}

/** The class of what failed: the module's own error inside the HTTP exception. */
function exceptionTypeOf(error: unknown): string {
  const own = error instanceof PaymentWebhookHttpException ? error.error : error;
  return own instanceof Error ? own.name : 'Error';
}

/** `code` and HTTP status of what the route answers for `error`. */
function answerOf(error: unknown): { code: string; status: number } {
  if (error instanceof PaymentWebhookHttpException) return { code: error.code, status: error.getStatus() };
  return { code: PaymentWebhookErrorCode.INTERNAL_ERROR, status: 500 };
}
