/**
 * Errors thrown by `PaymentGatewayService`. Every one extends `PaymentApiError`, so a
 * single `instanceof` check catches them all; subclasses group the service's codes by
 * what the caller should do. None of them holds request headers, the bearer token or a
 * secret: they are built from our own fields, never from a raw axios error.
 */

import { paymentEnvName } from '../config/payment-env.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';

/** Every error code the service documents. Branch on these, never on `message`. @publicApi */
export const PaymentErrorCode = {
  /** 401: no Authorization header sent. */
  TOKEN_MISSING: 'PAY_1001',
  /** 403: token matches no live payment session. */
  TOKEN_INVALID: 'PAY_1002',
  /** 401: token issued more than 10 minutes ago. */
  TOKEN_EXPIRED: 'PAY_1003',
  /** 401: `client_id` unknown or `client_secret` mismatch. */
  INVALID_CREDENTIALS: 'PAY_1004',
  /** 400: sandbox credentials on the live URL or the reverse. */
  CREDENTIALS_MODE_MISMATCH: 'PAY_1005',
  /** 404: `trx_id` unknown or owned by another merchant. */
  PAYMENT_NOT_FOUND: 'PAY_2001',
  /** 400: session status prevents the action. */
  PAYMENT_INVALID_STATE: 'PAY_2002',
  /** 400: credential mode differs from URL environment. */
  MODE_MISMATCH: 'PAY_2003',
  /** 422: only `SUCCESS` payments can be refunded. */
  REFUND_PAYMENT_NOT_COMPLETED: 'PAY_2004',
  /** 404: `refund_uid` unknown or owned by another merchant. */
  REFUND_NOT_FOUND: 'PAY_2005',
  /** 422: the payment's provider has no API refunds. */
  REFUND_NOT_SUPPORTED: 'PAY_2006',
  /** 422: payout rejected (balance, destination, recipient). */
  PAYOUT_FAILED: 'PAY_3001',
  /** 404: `payout_uid` unknown or owned by another merchant. */
  PAYOUT_NOT_FOUND: 'PAY_3002',
  /** 400: validation failed; per-field messages in `errors`. */
  VALIDATION_FAILED: 'PAY_4000',
  /** 500: token generation failed; retry with backoff. */
  TOKEN_CREATION_FAILED: 'PAY_5001',
  /** 400: session creation failed; retry with the same idempotency key. */
  PAYMENT_CREATION_FAILED: 'PAY_5002',
  /** 500: every provider of the cascade failed. */
  PROVIDER_ERROR: 'PAY_5003',
  /** 400: merchant deleted, suspended or credentials detached. */
  MERCHANT_INACTIVE: 'PAY_6001',
} as const;

/** @publicApi */
export type PaymentErrorCode = (typeof PaymentErrorCode)[keyof typeof PaymentErrorCode];

/**
 * Codes this client uses where the service gave none (the service documents no code for 429
 * and none for transport failures).
 * @publicApi
 */
export const PaymentClientErrorCode = {
  RATE_LIMITED: 'RATE_LIMITED',
  NETWORK_ERROR: 'NETWORK_ERROR',
  TIMEOUT: 'TIMEOUT',
  UNEXPECTED_RESPONSE: 'UNEXPECTED_RESPONSE',
  CONFIGURATION_ERROR: 'CONFIGURATION_ERROR',
  ABORTED: 'ABORTED',
} as const;

/** @publicApi */
export type PaymentClientErrorCode = (typeof PaymentClientErrorCode)[keyof typeof PaymentClientErrorCode];

const NAMED_CODES: ReadonlySet<string> = new Set<string>([...Object.values(PaymentErrorCode), ...Object.values(PaymentClientErrorCode)]);

/** Whether the spec's error list or this client names `code` (any other code is text of an answer). */
export function isNamedPaymentErrorCode(code: string): boolean {
  return NAMED_CODES.has(code);
}

/** @publicApi */
export interface PaymentApiErrorDetails {
  code: string;
  message: string;
  /** HTTP status of the service's answer; undefined when there was none. */
  httpStatus?: number;
  /** Field name → messages (validation errors); empty otherwise. */
  errors?: Record<string, string[]>;
  /** Seconds from the `Retry-After` header, when the service sent one. */
  retryAfterSeconds?: number;
  /** Method and path (under the API base) of the failed call; no query secrets exist. */
  method?: string;
  path?: string;
  /** Set on `createPayment` failures: retry with this key and at most one payment exists. */
  idempotencyKey?: string;
  /** The merchant account whose client failed; named accounts also say it in the message. */
  account?: string;
  /** Whether the service may have acted on this call (see `PaymentApiError.mayHaveReachedService`). @default false */
  mayHaveReachedService?: boolean;
}

/** Named accounts say which account failed in the message itself; the default account adds nothing. */
function messageWithAccount(message: string, account: string | undefined): string {
  if (account === undefined || account === DEFAULT_PAYMENT_ACCOUNT) return message;
  const prefix = `account '${account}': `;
  return message.startsWith(prefix) ? message : prefix + message;
}

/** `error`'s message without the account prefix `messageWithAccount` gave it, for a message that adds it once. @internal */
export function messageWithoutAccount(error: PaymentApiError): string {
  const prefix = `account '${error.account}': `;
  return error.account !== undefined && error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
}

/** Base class of every error this client throws. @publicApi */
export class PaymentApiError extends Error {
  readonly code: string;
  readonly httpStatus: number | undefined;
  readonly errors: Record<string, string[]>;
  readonly retryAfterSeconds: number | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly idempotencyKey: string | undefined;
  readonly account: string | undefined;
  /**
   * True when the service may have acted on the call although it failed: its request may have
   * been read (a time-out, a reset after sending), or an earlier attempt of it may have been (a
   * time-out, then a 429 or a token failure on the retry). Check before sending a refund or
   * payout again; call `createPayment` again with the same `idempotencyKey`. False when the
   * call surely changed nothing.
   */
  readonly mayHaveReachedService: boolean;

  constructor(details: PaymentApiErrorDetails) {
    super(messageWithAccount(details.message, details.account));
    this.name = new.target.name;
    this.code = details.code;
    this.httpStatus = details.httpStatus;
    this.errors = details.errors ?? {};
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.method = details.method;
    this.path = details.path;
    this.idempotencyKey = details.idempotencyKey;
    this.account = details.account;
    this.mayHaveReachedService = details.mayHaveReachedService ?? false;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      httpStatus: this.httpStatus,
      message: this.message,
      errors: this.errors,
      retryAfterSeconds: this.retryAfterSeconds,
      method: this.method,
      path: this.path,
      idempotencyKey: this.idempotencyKey,
      account: this.account,
      mayHaveReachedService: this.mayHaveReachedService,
    };
  }
}

/**
 * A copy of `error` saying an earlier attempt of the call may have reached the service (same
 * class, code, fields and stack), for a call that ends on an error of a later attempt.
 */
export function withEarlierAttemptMayHaveActed<E extends PaymentApiError>(error: E): E {
  if (error.mayHaveReachedService) return error;
  const message = `${error.message}; an earlier attempt may have reached the service`;
  const hidden = { enumerable: false, writable: true, configurable: true };
  const copy = Object.create(Object.getPrototypeOf(error)) as E;
  Object.defineProperties(copy, {
    ...Object.getOwnPropertyDescriptors(error),
    message: { value: message, ...hidden },
    mayHaveReachedService: { value: true, enumerable: true, configurable: true },
    ...(typeof error.stack === 'string' ? { stack: { value: error.stack.replace(error.message, () => message), ...hidden } } : {}),
  });
  return copy;
}

/** 1001–1005, 2003, 6001: credentials, token or mode are wrong. Fix configuration; retrying does not help. @publicApi */
export class PaymentAuthenticationError extends PaymentApiError {}

/** 2001, 2005, 3002: the payment, refund or payout does not exist for this merchant. @publicApi */
export class PaymentNotFoundError extends PaymentApiError {}

/** 2002, 2004, 2006: the resource's state or provider forbids the action. @publicApi */
export class PaymentInvalidStateError extends PaymentApiError {}

/** 3001: the payout was rejected (balance, destination or recipient); details in `message`. @publicApi */
export class PaymentPayoutError extends PaymentApiError {}

/**
 * Most fields a `PaymentValidationError`'s `errors` holds, and most messages per field: the
 * service's answer and the client's own checks alike (an input of a million bad elements would
 * make a message of megabytes, and scrubbing a service's answer of that size stalls the process).
 * @internal
 */
export const MAX_FIELD_ERRORS = 100;
/** @internal */
export const MAX_MESSAGES_PER_FIELD = 10;

/**
 * 4000: bad input. Also thrown before any request for input this client can check
 * itself; then `httpStatus` is undefined and nothing was sent.
 * @publicApi
 */
export class PaymentValidationError extends PaymentApiError {
  /** True when the service never saw the request (client-side check). */
  readonly clientSide: boolean;

  constructor(details: PaymentApiErrorDetails & { clientSide?: boolean }) {
    super(details);
    this.clientSide = details.clientSide ?? false;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), clientSide: this.clientSide };
  }
}

/** 5003: every provider of the cascade failed. @publicApi */
export class PaymentProviderError extends PaymentApiError {}

/** 429: the service's rate limit was hit; `retryAfterSeconds` says how long to wait. @publicApi */
export class PaymentRateLimitError extends PaymentApiError {}

/** 5001, 5002, other 5xx, or a 2xx answer this client cannot read. @publicApi */
export class PaymentServerError extends PaymentApiError {}

/** The client is not configured to make this call (e.g. no client id / secret). @publicApi */
export class PaymentClientConfigurationError extends PaymentApiError {}

/** A call of an account without client credentials, naming the account's own variables. */
export function missingCredentialsError(account: string): PaymentClientConfigurationError {
  const [id, secret] = [paymentEnvName('clientId', account), paymentEnvName('clientSecret', account)];
  const message = `clientId and clientSecret (${id} / ${secret}) are required to call the payment service`;
  return new PaymentClientConfigurationError({ account, code: PaymentClientErrorCode.CONFIGURATION_ERROR, message });
}

/** @publicApi */
export type PaymentNetworkFailure = 'timeout' | 'connection-refused' | 'dns' | 'connection-reset' | 'other';

/**
 * No HTTP answer: time-out, refused or reset connection, DNS failure. With `httpStatus` set,
 * an answer came whose body could not be read (a reset mid-body): the service got the request.
 * @publicApi
 */
export class PaymentNetworkError extends PaymentApiError {
  /**
   * False only when the request surely never reached the service (refused connection,
   * DNS failure) and no earlier attempt may have: then even a refund or payout is safe to
   * send again. True after a time-out or a reset once the request was sent.
   */
  declare readonly mayHaveReachedService: boolean;
  readonly failure: PaymentNetworkFailure;

  constructor(details: PaymentApiErrorDetails & { mayHaveReachedService: boolean; failure: PaymentNetworkFailure }) {
    super(details);
    this.failure = details.failure;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), failure: this.failure };
  }
}

/**
 * A 2xx the client could not read (`why`: a body cut short, or no JSON object where the service
 * answers one): the service got the request and acted on it. `isUnreadSuccess` recognises it.
 */
export function unreadSuccessError(method: string, path: string, httpStatus: number, why: string, failure: PaymentNetworkFailure): PaymentNetworkError {
  return new PaymentNetworkError({
    code: PaymentClientErrorCode.NETWORK_ERROR,
    message: `${method} ${path} was answered ${httpStatus}, but ${why}`,
    httpStatus,
    method,
    path,
    mayHaveReachedService: true,
    failure,
  });
}

/**
 * The call's `signal` aborted it while it waited (rate-limit slot, token, backoff,
 * `Retry-After`); nothing was sent after that. @publicApi
 */
export class PaymentAbortedError extends PaymentApiError {
  /**
   * True when an earlier attempt of this call may have reached the service (a time-out, then
   * the abort during the backoff): check before calling again, as after a `PaymentNetworkError`.
   */
  declare readonly mayHaveReachedService: boolean;

  constructor(details: PaymentApiErrorDetails & { mayHaveReachedService: boolean; cause?: unknown }) {
    super(details);
    if (details.cause !== undefined) Object.defineProperty(this, 'cause', { value: details.cause, enumerable: false });
  }
}
