import { type Attributes, context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { isNamedPaymentErrorCode, PaymentAbortedError } from '../client/payment-api.errors.js';
import { isTokenFailureOfCall } from '../client/payment-token-failure.js';
import { endSpan } from './payment-handler.tracing.js';
import { telemetryFailed } from './telemetry-fault.js';
import type { PaymentInstruments } from './payment-telemetry.js';
import { paymentTelemetry } from './payment-telemetry.js';
import { type PaymentClientOperation, type PaymentClientOutcome, PaymentSpanAttribute } from './payment-telemetry.names.js';

/** Code of a thrown value that is not one of the client's errors. */
const UNEXPECTED_ERROR_CODE = 'UNEXPECTED_ERROR';

/**
 * Telemetry of ONE account's calls to the service. `start` returns `undefined` when the
 * host registered neither a MeterProvider nor a TracerProvider, and the executor then
 * does no telemetry work at all.
 */
export class PaymentClientTelemetry {
  constructor(
    private readonly account: string,
    /** The client's clock: a call's duration holds its waits, which run on it (a test's clock too). */
    private readonly clock: { now(): number },
  ) {}

  /** Starts the telemetry of one logical call (every attempt of it). */
  start(operation: PaymentClientOperation, method: string): PaymentClientCallTelemetry | undefined {
    const instruments = paymentTelemetry.instruments();
    const tracer = paymentTelemetry.tracer();
    if (instruments === undefined && tracer === undefined) return undefined;
    let span: Span | undefined;
    try {
      span = tracer?.startSpan(
        `payment client ${operation}`,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            [PaymentSpanAttribute.OPERATION]: operation,
            [PaymentSpanAttribute.ACCOUNT]: this.account,
            'http.request.method': method,
          },
        },
        context.active(),
      );
    } catch (error) {
      telemetryFailed(error);
    }
    return new PaymentClientCallTelemetry(operation, this.account, instruments, span, this.clock);
  }
}

/**
 * One logical call: its span (active while the attempts run, so the token call and the
 * host's HTTP spans nest under it), its retries and rate-limit waits, and at the end one
 * `payment_gateway.client.requests` count and one `payment_gateway.client.duration` value.
 * No method throws: the call's outcome is the service's answer, whatever the SDK does.
 */
export class PaymentClientCallTelemetry {
  private readonly startedAt: number;
  private retries = 0;
  /**
   * Status of the last answer a failed attempt that was to be repeated got: the call's status when
   * it ends before that repeat is sent (given up during its wait, or a token failure, whose error
   * carries the token call's status).
   */
  private lastAnswerStatus: number | undefined;
  /** The failed attempt whose repeat is waited for (`attemptFailed`), counted when it is sent. */
  private repeat: { code: string; delayMs: number; httpStatus: number | undefined } | undefined;

  constructor(
    readonly operation: PaymentClientOperation,
    private readonly account: string,
    private readonly instruments: PaymentInstruments | undefined,
    private readonly span: Span | undefined,
    private readonly clock: { now(): number },
  ) {
    this.startedAt = clock.now();
  }

  /** Runs the attempts (with the span active) and records how the call ended. */
  async run<T extends { status: number }>(attempts: () => Promise<T>): Promise<T> {
    let answer: T;
    try {
      answer = this.span === undefined ? await attempts() : await context.with(trace.setSpan(context.active(), this.span), attempts);
    } catch (error) {
      this.end('error', error);
      throw error;
    }
    this.end('ok', undefined, answer.status);
    return answer;
  }

  /** Time the attempt waited for a client-side rate-limit slot. */
  rateLimitWaited(ms: number): void {
    try {
      this.instruments?.clientRateLimitWait.record(Math.max(0, ms) / 1000, { operation: this.operation, account: this.account });
    } catch (error) {
      telemetryFailed(error);
    }
  }

  /**
   * An attempt failed with `code` (its answer's `httpStatus`, if any) and is to be repeated after
   * `delayMs`: a retry once the repeat is sent (`sending`), none if the call ends first.
   */
  attemptFailed(code: string, delayMs: number, httpStatus: number | undefined): void {
    this.lastAnswerStatus = httpStatus;
    this.repeat = { code, delayMs, httpStatus };
  }

  /** An attempt goes on the wire: the repeat of a failed one is counted as a retry. */
  sending(): void {
    const repeat = this.repeat;
    if (repeat === undefined) return;
    this.repeat = undefined;
    this.retries++;
    const { code, delayMs, httpStatus } = repeat;
    const known = metricCode(code, httpStatus);
    try {
      this.instruments?.clientRetries.add(1, { operation: this.operation, code: known, account: this.account });
      this.span?.addEvent('retry', { [PaymentSpanAttribute.CODE]: known, [PaymentSpanAttribute.RETRY_DELAY_MS]: delayMs, [PaymentSpanAttribute.RETRY_NUMBER]: this.retries });
    } catch (error) {
      telemetryFailed(error);
    }
  }

  /** The call's measurements and the end of its span, each guarded on its own: one failing never skips the other. */
  private end(outcome: PaymentClientOutcome, error: unknown, okStatus?: number): void {
    const code = error === undefined ? undefined : codeOf(error);
    // a call not sent (again) for want of a token, given up, or whose last attempt got no answer (a
    // time-out after a 503): the call's own last answer is the one before (none when it got none);
    // the status on a token failure is the token call's
    const httpStatus =
      error === undefined ? okStatus : isTokenFailureOfCall(error) || error instanceof PaymentAbortedError ? this.lastAnswerStatus : (statusOf(error) ?? this.lastAnswerStatus);
    if (this.instruments !== undefined) {
      try {
        const attributes: Attributes = { operation: this.operation, outcome, account: this.account };
        if (code !== undefined) attributes.code = code;
        if (httpStatus !== undefined) attributes.http_status = httpStatus;
        this.instruments.clientRequests.add(1, attributes);
        this.instruments.clientDuration.record((this.clock.now() - this.startedAt) / 1000, attributes);
      } catch (failure) {
        telemetryFailed(failure);
      }
    }
    const span = this.span;
    if (span === undefined) return;
    try {
      span.setAttribute(PaymentSpanAttribute.OUTCOME, outcome);
      span.setAttribute(PaymentSpanAttribute.RETRIES, this.retries);
      if (httpStatus !== undefined) span.setAttribute('http.response.status_code', httpStatus);
      if (code !== undefined) span.setAttribute(PaymentSpanAttribute.CODE, code);
    } catch (failure) {
      telemetryFailed(failure);
    }
    if (code !== undefined) {
      // The code and status only, never the error's text: the service's message may echo the
      // request's fields (a recipient's account number), and secrets are not all it could hold.
      const name = error instanceof Error ? error.name : 'Error';
      const message = httpStatus === undefined ? code : `${code} (HTTP ${httpStatus})`;
      try {
        span.recordException({ name, message });
        span.setStatus({ code: SpanStatusCode.ERROR, message });
      } catch (failure) {
        telemetryFailed(failure);
      }
    }
    endSpan(span);
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || code === '') return UNEXPECTED_ERROR_CODE;
  return metricCode(code, statusOf(error));
}

/**
 * `code` when the spec or the client names it; else the answer's status as `HTTP_<status>` (a
 * bounded set), else `other`. Only these: any other code is the answer's text (a `PAY_5059`
 * the spec does not name, an `HTTP_999` in a body), and each would be a series of its own.
 */
function metricCode(code: string, httpStatus?: number): string {
  const statusCode = httpStatus !== undefined && Number.isInteger(httpStatus) && httpStatus >= 100 && httpStatus <= 599 ? `HTTP_${httpStatus}` : undefined;
  if (isNamedPaymentErrorCode(code) || code === statusCode) return code;
  return statusCode ?? 'other';
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { httpStatus?: unknown } | null)?.httpStatus;
  return typeof status === 'number' ? status : undefined;
}
