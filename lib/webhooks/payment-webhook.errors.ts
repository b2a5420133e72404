import { paymentEnvName } from '../config/payment-env.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';

/**
 * Errors of the webhook receiver. Each has a stable `code` (clients and tests
 * branch on it) and the HTTP status the route answers with. Messages never
 * carry secrets, signatures or payload values.
 */

/** Stable codes of every error the webhook route answers with. @publicApi */
export const PaymentWebhookErrorCode = {
  SIGNATURE_MISSING: 'WEBHOOK_SIGNATURE_MISSING',
  SIGNATURE_MALFORMED: 'WEBHOOK_SIGNATURE_MALFORMED',
  SIGNATURE_MISMATCH: 'WEBHOOK_SIGNATURE_MISMATCH',
  TIMESTAMP_OUT_OF_TOLERANCE: 'WEBHOOK_TIMESTAMP_OUT_OF_TOLERANCE',
  SECRET_NOT_CONFIGURED: 'WEBHOOK_SECRET_NOT_CONFIGURED',
  RAW_BODY_MISSING: 'WEBHOOK_RAW_BODY_MISSING',
  BODY_TOO_LARGE: 'WEBHOOK_BODY_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE',
  INVALID_JSON: 'WEBHOOK_INVALID_JSON',
  INVALID_ENVELOPE: 'WEBHOOK_INVALID_ENVELOPE',
  IDEMPOTENCY_KEY_MISSING: 'WEBHOOK_IDEMPOTENCY_KEY_MISSING',
  EVENT_IN_FLIGHT: 'WEBHOOK_EVENT_IN_FLIGHT',
  HANDLER_FAILED: 'WEBHOOK_HANDLER_FAILED',
  STORE_UNAVAILABLE: 'WEBHOOK_STORE_UNAVAILABLE',
  QUEUE_UNAVAILABLE: 'WEBHOOK_QUEUE_UNAVAILABLE',
  RECONCILIATION_FAILED: 'WEBHOOK_RECONCILIATION_FAILED',
  BAD_REQUEST: 'WEBHOOK_BAD_REQUEST',
  REQUEST_REFUSED: 'WEBHOOK_REQUEST_REFUSED',
  UNKNOWN_ACCOUNT: 'WEBHOOK_UNKNOWN_ACCOUNT',
  INTERNAL_ERROR: 'WEBHOOK_INTERNAL_ERROR',
  ROUTE_MISCONFIGURED: 'WEBHOOK_ROUTE_MISCONFIGURED',
} as const;

/** @publicApi */
export type PaymentWebhookErrorCode = (typeof PaymentWebhookErrorCode)[keyof typeof PaymentWebhookErrorCode];

/** JSON body of every error answered on the webhook route. @publicApi */
export interface PaymentWebhookErrorBody {
  statusCode: number;
  code: PaymentWebhookErrorCode | string;
  message: string;
  /** Only on `WEBHOOK_INVALID_ENVELOPE`: field → problems. */
  errors?: Record<string, string[]>;
}

/** The code of an answer with `status` that did not come from this package (a body parser's, another `HttpException`). */
export function webhookErrorCodeForStatus(status: number): PaymentWebhookErrorCode {
  switch (status) {
    case 413:
      return PaymentWebhookErrorCode.BODY_TOO_LARGE;
    case 415:
      return PaymentWebhookErrorCode.UNSUPPORTED_MEDIA_TYPE;
    case 400:
      return PaymentWebhookErrorCode.BAD_REQUEST;
    default:
      // another 4xx is a refusal of the app's, not a bad request (a rate limiter's 429, an auth guard's 403)
      return status >= 500 ? PaymentWebhookErrorCode.INTERNAL_ERROR : PaymentWebhookErrorCode.REQUEST_REFUSED;
  }
}

/** Base of every webhook receiver error. Plain `Error`, so it works outside Nest too. @publicApi */
export class PaymentWebhookError extends Error {
  override readonly name: string = 'PaymentWebhookError';

  constructor(
    readonly code: PaymentWebhookErrorCode,
    readonly httpStatus: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  /** The JSON body the route answers with. */
  toResponseBody(): PaymentWebhookErrorBody {
    return { statusCode: this.httpStatus, code: this.code, message: this.message };
  }

  toJSON(): PaymentWebhookErrorBody & { name: string } {
    return { name: this.name, ...this.toResponseBody() };
  }
}

/** The signature header is missing, malformed, does not match, or is outside the replay window. @publicApi */
export class WebhookSignatureError extends PaymentWebhookError {
  override readonly name: string = 'WebhookSignatureError';
}

/** No `X-Service-Signature` header (400). */
export class WebhookSignatureMissingError extends WebhookSignatureError {
  override readonly name = 'WebhookSignatureMissingError';
  constructor() {
    super(PaymentWebhookErrorCode.SIGNATURE_MISSING, 400, 'The X-Service-Signature header is missing');
  }
}

/** The header is not `t=<unix>,v1=<64 hex>[,v1=...]` (400). */
export class WebhookSignatureMalformedError extends WebhookSignatureError {
  override readonly name = 'WebhookSignatureMalformedError';
  constructor(reason: string) {
    super(PaymentWebhookErrorCode.SIGNATURE_MALFORMED, 400, `The X-Service-Signature header is malformed: ${reason}`);
  }
}

/** No `v1` digest matches any configured secret (401). */
export class WebhookSignatureMismatchError extends WebhookSignatureError {
  override readonly name = 'WebhookSignatureMismatchError';
  constructor() {
    super(PaymentWebhookErrorCode.SIGNATURE_MISMATCH, 401, 'The webhook signature does not match the body');
  }
}

/** `t` is further from now than the tolerance: a replay or a badly skewed clock (401). */
export class WebhookTimestampOutOfToleranceError extends WebhookSignatureError {
  override readonly name = 'WebhookTimestampOutOfToleranceError';
  constructor(
    readonly timestamp: number,
    readonly toleranceSeconds: number,
  ) {
    super(
      PaymentWebhookErrorCode.TIMESTAMP_OUT_OF_TOLERANCE,
      401,
      `The webhook signature timestamp is more than ${toleranceSeconds} seconds away from the current time`,
    );
  }
}

/** Verification was asked for without any secret: a configuration fault, not the sender's (500). */
export class WebhookSecretNotConfiguredError extends PaymentWebhookError {
  override readonly name = 'WebhookSecretNotConfiguredError';
  /**
   * `account`: whose variable the message names (`PAYMENT_EU_WEBHOOK_SECRET` for account `eu`);
   * `message` replaces that message (where no module configuration is involved).
   */
  constructor(account: string = DEFAULT_PAYMENT_ACCOUNT, message?: string) {
    super(
      PaymentWebhookErrorCode.SECRET_NOT_CONFIGURED,
      500,
      message ?? `No webhook secret is configured (set ${paymentEnvName('webhookSecret', account)} or the webhookSecret option)`,
    );
  }
}

/**
 * `PaymentWebhookReceiver.receive(request, account)` named an account no `forRoot()` registers
 * (404: a host route keyed on `/:account` was called with another name).
 */
export class WebhookUnknownAccountError extends PaymentWebhookError {
  override readonly name = 'WebhookUnknownAccountError';
  constructor(readonly account: string) {
    super(PaymentWebhookErrorCode.UNKNOWN_ACCOUNT, 404, 'No payment account receives webhooks under this name');
  }
}

/** Fix shown when the raw body is missing; the whole point is that it says exactly what to change. */
const RAW_BODY_FIX_MESSAGE =
  'The raw request body is not available, so the webhook signature cannot be verified. ' +
  'Create the application with the raw body kept: ' +
  'NestFactory.create(AppModule, { rawBody: true }) on Express, or ' +
  'NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { rawBody: true }) on Fastify ' +
  '(in a test: moduleRef.createNestApplication({ rawBody: true }), or createNestApplication(new FastifyAdapter(), { rawBody: true })) ' +
  '(and keep the default JSON body parser, or pass rawBody: true to app.useBodyParser).';

/** The app was created without `rawBody: true` (500, so it is noticed and the service retries). */
export class WebhookRawBodyMissingError extends PaymentWebhookError {
  override readonly name = 'WebhookRawBodyMissingError';
  constructor() {
    super(PaymentWebhookErrorCode.RAW_BODY_MISSING, 500, RAW_BODY_FIX_MESSAGE);
  }
}

/** Body over `webhookMaxBodyBytes` (413). */
export class WebhookBodyTooLargeError extends PaymentWebhookError {
  override readonly name = 'WebhookBodyTooLargeError';
  constructor(readonly limitBytes?: number) {
    super(
      PaymentWebhookErrorCode.BODY_TOO_LARGE,
      413,
      limitBytes === undefined
        ? 'The webhook body is too large'
        : `The webhook body is larger than ${limitBytes} bytes`,
    );
  }
}

/** Content type other than `application/json` (415). */
export class WebhookUnsupportedMediaTypeError extends PaymentWebhookError {
  override readonly name = 'WebhookUnsupportedMediaTypeError';
  /** @param charsetRefused the media type was right, its charset was not UTF-8 (never echoed: unverified input) */
  constructor(charsetRefused = false) {
    super(
      PaymentWebhookErrorCode.UNSUPPORTED_MEDIA_TYPE,
      415,
      charsetRefused ? 'The webhook body must be sent as application/json in UTF-8' : 'The webhook body must be sent as application/json',
    );
  }
}

/** Body is not valid JSON, or not valid UTF-8 (JSON exchanged between systems must be UTF-8, RFC 8259) (400). */
export class WebhookInvalidJsonError extends PaymentWebhookError {
  override readonly name = 'WebhookInvalidJsonError';
  constructor(message = 'The webhook body is not valid JSON') {
    super(PaymentWebhookErrorCode.INVALID_JSON, 400, message);
  }
}

/** Body is JSON but lacks what dispatch needs (`eventId`, `eventType`, `data`) (400). `errors` lists each bad field. */
export class WebhookInvalidEnvelopeError extends PaymentWebhookError {
  override readonly name = 'WebhookInvalidEnvelopeError';
  constructor(
    readonly errors: Record<string, string[]>,
    /** The body's `eventId` and `eventType` where each is well formed (for the log line; not in the answer). */
    readonly event: { eventId?: string; eventType?: string } = {},
  ) {
    super(
      PaymentWebhookErrorCode.INVALID_ENVELOPE,
      400,
      `The webhook body is not a valid event envelope (bad fields: ${Object.keys(errors).join(', ')})`,
    );
  }

  override toResponseBody(): PaymentWebhookErrorBody {
    return { ...super.toResponseBody(), errors: this.errors };
  }
}

/** The idempotency key function returned nothing usable (400). */
export class WebhookIdempotencyKeyMissingError extends PaymentWebhookError {
  override readonly name = 'WebhookIdempotencyKeyMissingError';
  /** @param unusable the key found is no usable key (too long, not well-formed Unicode); never echoed: unverified input */
  constructor(unusable = false) {
    super(
      PaymentWebhookErrorCode.IDEMPOTENCY_KEY_MISSING,
      400,
      unusable
        ? "The request's idempotency key is not usable: too long, or not well-formed Unicode"
        : 'The request carries no idempotency key',
    );
  }
}

/** Another delivery of the same event holds the claim right now (409: the service retries later). */
export class WebhookEventInFlightError extends PaymentWebhookError {
  override readonly name = 'WebhookEventInFlightError';
  constructor() {
    super(
      PaymentWebhookErrorCode.EVENT_IN_FLIGHT,
      409,
      'This event is being processed by another delivery; retry later',
    );
  }
}

/**
 * A handler failed; the claim was released so the next delivery runs the handlers again (500).
 * The `cause` of the exception a host filter receives; its own `cause` is the `PaymentEventHandlerError`.
 * @publicApi
 */
export class WebhookHandlerFailedError extends PaymentWebhookError {
  override readonly name = 'WebhookHandlerFailedError';
  constructor(options?: { cause?: unknown }) {
    super(
      PaymentWebhookErrorCode.HANDLER_FAILED,
      500,
      'A handler of this event failed; the event was not marked processed and will run again on redelivery',
      options,
    );
  }
}

/** The event store cannot be reached (503: nothing was processed, the service retries). */
export class WebhookStoreUnavailableResponseError extends PaymentWebhookError {
  override readonly name = 'WebhookStoreUnavailableResponseError';
  constructor(options?: { cause?: unknown }) {
    super(
      PaymentWebhookErrorCode.STORE_UNAVAILABLE,
      503,
      'The webhook event store is unavailable; the event was not processed, retry later',
      options,
    );
  }
}

/** Reconciliation could not read the canonical status: the service, not the handler, is at fault (503, retried). */
export class WebhookReconciliationFailedError extends PaymentWebhookError {
  override readonly name = 'WebhookReconciliationFailedError';
  constructor(options?: { cause?: unknown }) {
    super(
      PaymentWebhookErrorCode.RECONCILIATION_FAILED,
      503,
      'The payment status could not be read for reconciliation; no handler ran, retry later',
      options,
    );
  }
}

/**
 * Something other than the module's own refusals failed while answering (a custom store that
 * returned something unexpected, a bug): 500, so the service retries. Its `cause` is what was
 * thrown; the answer's message says nothing about it (it may hold payload values).
 */
export class WebhookInternalError extends PaymentWebhookError {
  override readonly name = 'WebhookInternalError';
  constructor(options?: { cause?: unknown }) {
    super(PaymentWebhookErrorCode.INTERNAL_ERROR, 500, 'Internal error while receiving the webhook; it was not processed, retry later', options);
  }
}

/**
 * A route of the app's own whose building blocks cannot work together (the envelope guard without
 * the signature guard before it, the interceptor without a key, the receiver behind the
 * interceptor, ...): a fault of the app, never of the sender. Answered 500 (the service retries
 * once it is fixed); `fix` says what to change and is logged, not answered.
 */
export class WebhookRouteMisconfiguredError extends PaymentWebhookError {
  override readonly name = 'WebhookRouteMisconfiguredError';
  constructor(
    readonly fix: string,
    options?: { cause?: unknown },
  ) {
    super(PaymentWebhookErrorCode.ROUTE_MISCONFIGURED, 500, 'The webhook route is misconfigured; the event was not processed (see the application log)', options);
  }
}
