import { context, type Span, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { errorMessage } from '../common/error-message.util.js';
import type { AnyPaymentEvent } from '../events/payment-event.types.js';
import { PaymentSpanAttribute } from './payment-telemetry.names.js';

/**
 * Runs one handler invocation in its own span, `payment handler <ClassName.method>`, a
 * child of the active span (the delivery's `payment webhook <type>` span on the module's
 * route). A failure is recorded on the span (the handler's own exception) and rethrown.
 * Only called when the host registered a TracerProvider.
 */
export function traceHandler(tracer: Tracer, handler: string, event: AnyPaymentEvent, invoke: () => unknown): Promise<unknown> {
  const parent = context.active();
  const span = tracer.startSpan(
    `payment handler ${handler}`,
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
  let running: Promise<unknown>;
  try {
    running = Promise.resolve(context.with(trace.setSpan(parent, span), invoke));
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.then(
    (result) => {
      span.end();
      return result;
    },
    (error: unknown) => {
      recordSpanError(span, error);
      span.end();
      throw error;
    },
  );
}

/** Marks `span` failed with `error` (recorded as an exception, its message as the status). */
export function recordSpanError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
}
