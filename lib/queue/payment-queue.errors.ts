import { errorMessage } from '../common/error-message.util.js';
import { PaymentEventHandlerError } from '../events/payment-event.errors.js';
import { PaymentWebhookError, PaymentWebhookErrorCode } from '../webhooks/payment-webhook.errors.js';
import { clientErrorSummary } from '../telemetry/client-error-summary.js';

/**
 * Queue mode could not hand the event to Redis within the time-out (Redis down, slow or
 * out of memory): 503, nothing was acknowledged, the service retries the delivery.
 */
export class WebhookQueueUnavailableError extends PaymentWebhookError {
  override readonly name = 'WebhookQueueUnavailableError';
  constructor(options?: { cause?: unknown }) {
    super(
      PaymentWebhookErrorCode.QUEUE_UNAVAILABLE,
      503,
      'The event queue is unavailable; the event was not accepted, retry later',
      options,
    );
  }
}

/**
 * A `PaymentDeadLetterService` method found the account's queue Redis unreachable
 * (down, refusing the password) or silent within `redisTimeoutMs`. Its message says why,
 * without the Redis password.
 * @publicApi
 */
export class PaymentQueueUnavailableError extends Error {
  override readonly name = 'PaymentQueueUnavailableError';
  readonly code = 'QUEUE_UNAVAILABLE';

  constructor(
    /** The account whose queue could not be read. */
    readonly account: string,
    reason: string,
  ) {
    super(`The event queue of account ${account} is unavailable: ${reason}`);
  }
}

/**
 * A `PaymentDeadLetterService.replay()` or `discard()` waited 10 s for another replay or discard
 * of the same dead letter (in this or another instance) to finish, and gave up: nothing was done.
 * Try again (an admin route may answer 409).
 * @publicApi
 */
export class PaymentDeadLetterBusyError extends Error {
  override readonly name = 'PaymentDeadLetterBusyError';
  readonly code = 'DEAD_LETTER_BUSY';

  constructor(
    /** The account of the dead letter. */
    readonly account: string,
    readonly eventId: string,
  ) {
    super(`Another replay or discard of dead letter ${eventId} (account ${account}) is still under way; try again`);
  }
}

/**
 * An account uses `processing: 'queue'` but the optional peer `bullmq` (or `ioredis`,
 * which bullmq 6 needs) is not installed. Thrown at boot.
 * @publicApi
 */
export class BullMqMissingError extends Error {
  override readonly name = 'BullMqMissingError';
  readonly code = 'BULLMQ_NOT_INSTALLED';

  constructor(
    /** The packages that could not be found. */
    readonly missing: readonly string[],
    options?: { cause?: unknown; account?: string; setting?: string },
  ) {
    const whose = options?.account === undefined ? '' : `Account '${options.account}' has `;
    const setting = options?.setting === undefined ? '' : ` (${options.setting})`;
    super(
      `${whose}processing: 'queue'${setting}, which needs the optional peer dependencies "bullmq" and "ioredis" ` +
        `(missing: ${missing.join(', ')}). Install them with \`npm i bullmq ioredis\`, or use processing: 'inline'.`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

/** In the message of an attempt that timed out (BullMQ keeps the message as the job's `failedReason`). */
export const JOB_TIMEOUT_MARK = 'did not finish within queueJobTimeoutMs';
/** A job whose handlers outlived `queueJobTimeoutMs`: the attempt fails, the handler is left running. */
export function jobTimeoutError(eventType: string, eventId: string, timeoutMs: number): Error {
  const error = new Error(
    `Handlers of ${eventType} event ${eventId} ${JOB_TIMEOUT_MARK} (${timeoutMs} ms); ` +
      'the attempt is given up, the handler is still running and keeps the event: its retry waits until that run ends ' +
      '(or this process stops)',
  );
  error.name = 'PaymentEventJobTimeoutError';
  return error;
}

/**
 * The error a failed attempt is recorded with (the dead letter's `lastError`, the attempt's log
 * line): handler failures name each handler with its error, other errors add their cause's
 * message. A client error of this module is named by class, code and status, not its message,
 * which quotes the service's answer (it may echo request fields).
 */
export function attemptError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const describe = (cause: unknown) => clientErrorSummary(cause) ?? errorMessage(cause);
  let message: string | undefined;
  if (error instanceof PaymentEventHandlerError) {
    const details = error.failures.map((f) => `${f.handler}: ${describe(f.error)}`).join('; ');
    message = `${error.failures.length} handler(s) failed for ${error.eventType} event ${error.eventId}: ${details}`;
  } else if (error.cause !== undefined) {
    message = `${error.message} (${describe(error.cause)})`;
  }
  if (message === undefined) return error;
  const wrapped = new Error(message, { cause: error });
  wrapped.name = error.name;
  return wrapped;
}
