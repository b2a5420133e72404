import { type Attributes, context, ROOT_CONTEXT, type Span, SpanKind, type SpanContext, trace, TraceFlags } from '@opentelemetry/api';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { endSpan } from './payment-handler.tracing.js';
import { paymentTelemetry } from './payment-telemetry.js';
import { metricEventType, PaymentSpanAttribute, type PaymentQueueJobOutcome } from './payment-telemetry.names.js';
import { telemetryFailed } from './telemetry-fault.js';

/** The delivery's span, as a job carries it from the webhook route to a worker (ids only). */
export interface QueuedTraceParent {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

/**
 * The active span's ids, to put in a job at the route; `undefined` without tracing, so the
 * job data stays as it was.
 */
export function queuedTraceParent(): QueuedTraceParent | undefined {
  if (paymentTelemetry.tracer() === undefined) return undefined;
  try {
    const parent = trace.getSpanContext(context.active());
    if (parent === undefined || !trace.isSpanContextValid(parent)) return undefined;
    return { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.traceFlags };
  } catch (error) {
    telemetryFailed(error);
    return undefined;
  }
}

/**
 * One account's worker telemetry: each attempt of a job runs in a `payment job <event_type>`
 * span (a consumer span, child of the delivery's span when the job carries it, so the
 * handlers' spans join the delivery's trace) and counts in `payment_gateway.queue.jobs` and
 * `payment_gateway.queue.duration`; a dead letter counts in `payment_gateway.queue.dead_letters`.
 * Nothing is allocated without an SDK, and whatever the SDK throws stays here.
 */
export class QueueJobTelemetry {
  constructor(private readonly account: string) {}

  /**
   * Runs one attempt (`work`) of `event`'s job; `outcomeOf` names the outcome of a result or a
   * failure. `work` is the whole attempt, its time-out included: span and measurement end when
   * it settles, not when handlers it left running do.
   */
  run<T>(
    event: AnyPaymentEvent,
    attempt: number,
    parent: QueuedTraceParent | undefined,
    work: () => Promise<T>,
    outcomeOf: (result: { value: T } | { error: unknown }) => PaymentQueueJobOutcome,
  ): Promise<T> {
    const instruments = paymentTelemetry.instruments();
    const tracer = paymentTelemetry.tracer();
    if (instruments === undefined && tracer === undefined) return work();
    const startedAt = performance.now();
    let span: Span | undefined;
    let active = context.active();
    if (tracer !== undefined) {
      try {
        const parentContext = parent === undefined ? active : trace.setSpanContext(ROOT_CONTEXT, remoteSpanContext(parent));
        span = tracer.startSpan(
          `payment job ${metricEventType(event.eventType)}`,
          {
            kind: SpanKind.CONSUMER,
            attributes: {
              [PaymentSpanAttribute.ACCOUNT]: this.account,
              [PaymentSpanAttribute.EVENT_ID]: event.eventId,
              [PaymentSpanAttribute.EVENT_TYPE]: event.eventType,
              [PaymentSpanAttribute.ATTEMPT]: attempt,
            },
          },
          parentContext,
        );
        active = trace.setSpan(parentContext, span);
      } catch (error) {
        telemetryFailed(error);
        span = undefined;
      }
    }
    const finish = (outcome: PaymentQueueJobOutcome, error?: unknown): void => {
      this.record(outcome, event.eventType, startedAt);
      if (span === undefined) return;
      try {
        span.setAttribute(PaymentSpanAttribute.OUTCOME, outcome);
      } catch (failure) {
        telemetryFailed(failure);
      }
      if (error === undefined) endSpan(span);
      else endSpan(span, error);
    };
    return context.with(active, work).then(
      (value) => {
        finish(safeOutcome(outcomeOf, { value }, 'handled'));
        return value;
      },
      (error: unknown) => {
        const outcome = safeOutcome(outcomeOf, { error }, 'failed');
        // waiting behind another run is no failure of this one; a store that failed the claim is one
        finish(outcome, outcome === 'failed' || outcome === 'unavailable' ? error : undefined);
        throw error;
      },
    );
  }

  /** An event that failed its last attempt and is now a dead letter. */
  deadLettered(eventType: string): void {
    const instruments = paymentTelemetry.instruments();
    if (instruments === undefined) return;
    try {
      instruments.queueDeadLetters.add(1, { event_type: metricEventType(eventType), account: this.account });
    } catch (error) {
      telemetryFailed(error);
    }
  }

  private record(outcome: PaymentQueueJobOutcome, eventType: string, startedAt: number): void {
    const instruments = paymentTelemetry.instruments();
    if (instruments === undefined) return;
    const attributes: Attributes = { outcome, event_type: metricEventType(eventType), account: this.account };
    try {
      instruments.queueJobs.add(1, attributes);
      instruments.queueDuration.record((performance.now() - startedAt) / 1000, attributes);
    } catch (error) {
      telemetryFailed(error);
    }
  }
}

function remoteSpanContext(parent: QueuedTraceParent): SpanContext {
  return { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.traceFlags & TraceFlags.SAMPLED, isRemote: true };
}

function safeOutcome<R>(outcomeOf: (result: R) => PaymentQueueJobOutcome, result: R, fallback: PaymentQueueJobOutcome): PaymentQueueJobOutcome {
  try {
    return outcomeOf(result);
  } catch {
    return fallback;
  }
}
