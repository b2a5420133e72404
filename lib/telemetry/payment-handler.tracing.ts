import { type Context, context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { asPromise } from '../common/as-promise.util.js';
import { errorMessage } from '../common/error-message.util.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { clientErrorSummary } from './client-error-summary.js';
import { PaymentSpanAttribute } from './payment-telemetry.names.js';
import { telemetryFailed } from './telemetry-fault.js';

/**
 * Runs one handler invocation in its own span, `payment handler <ClassName.method>`, a
 * child of the active span (the delivery's `payment webhook <type>` span on the module's
 * route). A failure is recorded on the span (the handler's own exception) and rethrown.
 * The SDK throwing never changes the handler's outcome: a handler that ran must not count
 * as failed, and run again. Only called when the host registered a TracerProvider.
 */
export function traceHandler(tracer: Tracer, handler: string, event: AnyPaymentEvent, invoke: () => unknown, spanName: string = handler): Promise<unknown> {
  const parent = context.active();
  let span: Span;
  try {
    span = startHandlerSpan(tracer, handler, spanName, event, parent);
  } catch (error) {
    telemetryFailed(error);
    return asPromise(invoke);
  }
  return asPromise(() => context.with(trace.setSpan(parent, span), invoke)).then(
    (result) => {
      endSpan(span);
      return result;
    },
    (error: unknown) => {
      endSpan(span, error);
      throw error;
    },
  );
}

function startHandlerSpan(tracer: Tracer, handler: string, spanName: string, event: AnyPaymentEvent, parent: Context): Span {
  return tracer.startSpan(
    `payment handler ${spanName}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        [PaymentSpanAttribute.HANDLER]: handler,
        [PaymentSpanAttribute.EVENT_ID]: event.eventId,
        [PaymentSpanAttribute.EVENT_TYPE]: event.eventType,
        [PaymentSpanAttribute.ACCOUNT]: event.account,
      },
    },
    parent,
  );
}

/**
 * Ends `span`, recording `error` on it first when one is given; each step guarded on its own,
 * so a failing error record never leaves the span open, and whatever the SDK throws stays here.
 */
export function endSpan(span: Span, ...failure: [error: unknown] | []): void {
  try {
    if (failure.length > 0) recordSpanError(span, failure[0]);
  } catch (error) {
    telemetryFailed(error);
  }
  try {
    span.end();
  } catch (error) {
    telemetryFailed(error);
  }
}

/**
 * Marks `span` failed with `error` (recorded as an exception, its message as the status); a
 * client error of the module that reached the handler's caller by its code and status only.
 */
function recordSpanError(span: Span, error: unknown): void {
  const summary = clientErrorSummary(error);
  if (summary !== undefined) {
    span.recordException({ name: (error as Error).name, message: summary });
    span.setStatus({ code: SpanStatusCode.ERROR, message: summary });
    return;
  }
  // by its class, as delivery and client spans are: the SDK would take an error's `code` as its type
  span.recordException(error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
}
