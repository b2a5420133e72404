/** `@OnPaymentEvent` got something that is not a known event type, a family wildcard or `'*'`. @publicApi */
export class InvalidPaymentEventPatternError extends TypeError {
  override readonly name = 'InvalidPaymentEventPatternError';
  readonly code = 'PAYMENT_EVENT_PATTERN_INVALID';

  constructor(
    readonly pattern: unknown,
    reason?: string,
  ) {
    super(
      `@OnPaymentEvent: ${reason ?? `${describePattern(pattern)} is not a payment event type, a '<family>.*' wildcard or '*'`}`,
    );
  }
}

/** The pattern as written, when JSON can write it (a BigInt or a circular object cannot); else its type. */
function describePattern(pattern: unknown): string {
  try {
    return JSON.stringify(pattern) ?? String(pattern);
  } catch {
    return `a value of type ${typeof pattern}`;
  }
}

/** One handler that failed while an event was dispatched. @publicApi */
export interface PaymentEventHandlerFailure {
  /** `ClassName.methodName`, or `EventEmitter2:<event name>` for host `@OnEvent` listeners. */
  handler: string;
  error: unknown;
}

/**
 * One or more handlers of an event failed. Every matching handler still ran;
 * the webhook route answers non-2xx so the service delivers the event again.
 * The message names the handlers and event only, never payload fields.
 * @publicApi
 */
export class PaymentEventHandlerError extends AggregateError {
  override readonly name = 'PaymentEventHandlerError';
  readonly code = 'PAYMENT_EVENT_HANDLER_FAILED';

  constructor(
    readonly eventId: string,
    readonly eventType: string,
    readonly failures: readonly PaymentEventHandlerFailure[],
  ) {
    super(
      failures.map((failure) => failure.error),
      `${failures.length} handler(s) failed for ${eventType} event ${eventId}: ${failures.map((f) => f.handler).join(', ')}`,
    );
  }

  /** Names of the failed handlers. */
  get handlers(): string[] {
    return this.failures.map((failure) => failure.handler);
  }
}

/**
 * Reconciliation (`reconcile: true`) could not read the canonical status of a
 * payment, so no handler ran; the webhook route answers non-2xx and the service
 * retries later.
 * @publicApi
 */
export class PaymentEventReconciliationError extends Error {
  override readonly name = 'PaymentEventReconciliationError';
  readonly code = 'PAYMENT_EVENT_RECONCILIATION_FAILED';

  constructor(
    readonly eventId: string,
    readonly eventType: string,
    readonly trxId: string,
    options?: { cause?: unknown },
  ) {
    super(`Could not read the payment status of ${eventType} event ${eventId}; no handler ran`, options);
  }
}
