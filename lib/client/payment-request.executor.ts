import { setMaxListeners } from 'node:events';
import { inspect, type InspectOptions } from 'node:util';
import type { LoggerService } from '@nestjs/common';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { type PaymentClientCallTelemetry, PaymentClientTelemetry } from '../telemetry/payment-client.telemetry.js';
import {
  PaymentAbortedError,
  PaymentApiError,
  PaymentClientErrorCode,
  missingCredentialsError,
  PaymentNetworkError,
  PaymentRateLimitError,
  PaymentServerError,
  unreadSuccessError,
  withEarlierAttemptMayHaveActed,
} from './payment-api.errors.js';
import { paymentErrorFromResponse } from './payment-error-response.reader.js';
import { abortedCallError, abortedCheckError, eitherSignal } from './payment-call-abort.js';
import { untilAborted } from '../common/until-aborted.util.js';
import type { PaymentClientRuntime } from './payment-client.clock.js';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { PaymentHttpClient, type HttpAnswer } from './payment-http.client.js';
import { type PaymentIpRateLimits, PaymentRateLimiter, rateLimitPauseMs } from './payment-rate-limiter.js';
import { isRetryable, isTokenRefusal, isUnreadSuccess, retryAfterMsOf, retryAfterTooLongError } from './payment-retry.policy.js';
import { answerData, isErrorEnvelope, isForeignSuccessBody } from './payment-response.reader.js';
import { secretRedactor } from './payment-secret.redaction.js';
import { writeRequestBody } from './payment-request.bodies.js';
import type { ServiceAnswer, ServiceCall, TokenMode } from './payment-service-call.interface.js';
import { tokenFailureOfCall } from './payment-token-failure.js';
import { PaymentTokenManager, parseTokenData } from './payment-token.manager.js';

/** How long after giving up on a request the service is assumed to possibly still receive it. */
const LATE_ARRIVAL_GRACE_MS = 5_000;

/**
 * Runs one logical call: client-side rate limit, token, HTTP attempt, error mapping,
 * one retry with a new token on PAY_1002/PAY_1003, then backoff retries per policy.
 */
export class PaymentRequestExecutor {
  private readonly tokens: PaymentTokenManager;
  private readonly limiter: PaymentRateLimiter;
  private readonly telemetry: PaymentClientTelemetry;
  /** Token calls are limited per IP: every account of the app calling this service host shares the bucket. */
  private readonly ipLimitKey: string;
  /** Aborted by `close()`: calls waiting (a backoff, a Retry-After, a rate-limit slot) send nothing more. */
  private readonly closing = new AbortController();

  constructor(
    private readonly options: ResolvedPaymentOptions,
    private readonly http: PaymentHttpClient,
    private readonly runtime: PaymentClientRuntime,
    private readonly logger: LoggerService,
    perIp?: PaymentIpRateLimits,
  ) {
    this.ipLimitKey = new URL(options.apiBaseUrl).origin;
    this.limiter = new PaymentRateLimiter(options.rateLimits, runtime.clock, perIp, this.ipLimitKey);
    this.tokens = new PaymentTokenManager((signal, once) => this.requestToken(signal, once), runtime.clock, options.tokenResponse);
    this.telemetry = new PaymentClientTelemetry(options.account, runtime.clock);
    // every waiting call listens on it (and lets go): dozens queued for a slot are no leak
    setMaxListeners(0, this.closing.signal);
  }

  async execute(call: ServiceCall): Promise<ServiceAnswer> {
    // every wait also ends at shutdown: a retry must not go out after app.close()
    const linked = call.signal === undefined ? undefined : eitherSignal(call.signal, this.closing.signal);
    call = { ...call, signal: linked?.signal ?? this.closing.signal };
    try {
      // written before the call is observed: a body that cannot be written sent nothing, like any bad input
      const body = writeRequestBody(call, this.options.account);
      const observed = this.telemetry.start(call.operation ?? 'request', call.method);
      if (observed === undefined) return await this.attempts(call, body);
      return await observed.run(() => this.attempts(call, body, observed));
    } finally {
      linked?.dispose();
    }
  }

  /** Module shutdown: calls still waiting are given up (`PaymentAbortedError`), new ones are refused before sending. */
  close(): void {
    this.closing.abort(new Error('the payment client shut down'));
  }

  /**
   * Resolves when the client holds a usable access token: the cached one, or one asked for once
   * (no retries); rejects with the token call's error, or a `PaymentAbortedError` when `signal`
   * fired first (a request other checks share goes on for them).
   */
  async checkToken(signal?: AbortSignal): Promise<void> {
    try {
      await this.tokens.checkToken(signal);
    } catch (error) {
      if (signal?.aborted !== true || error instanceof PaymentAbortedError) throw error;
      throw abortedCheckError(this.options.endpoints.token, this.options.account);
    }
  }

  private async attempts(call: ServiceCall, body: string | undefined, observed?: PaymentClientCallTelemetry): Promise<ServiceAnswer> {
    let token: string | undefined, held: string[] = []; // `held`: tokens sent before (see the wait), redacted too
    let renewedToken = false;
    // the last failed attempt, and whether any attempt so far may have been acted on: a later
    // attempt's answer (a 429, a token failure) does not undo an earlier time-out
    let previous: PaymentApiError | undefined;
    let mayHaveActed = false;
    for (let retry = 0; ; ) {
      let answer: HttpAnswer | undefined;
      let failure: PaymentApiError | undefined, unreadable: PaymentApiError | undefined;
      // Slot first, token second: a call may queue for minutes, and a token taken before could expire there.
      const waitFrom = observed === undefined ? 0 : this.runtime.clock.now();
      const acquiring = this.limiter.acquire(call.limit, call.limit === 'token' ? this.ipLimitKey : this.limitKey(), call.signal);
      // recorded given up too: waits are longest where slots are scarcest
      const release = await acquiring
        .finally(() => observed?.rateLimitWaited(this.runtime.clock.now() - waitFrom))
        .catch((error: unknown) => this.rethrow(error, call, previous, mayHaveActed));
      let sending = false;
      let sentAt = 0;
      try {
        token ??= await untilAborted(this.tokenForCall(call, mayHaveActed), call.signal);
        // the last moment the call can be given up: past it, the request is on the wire
        this.throwIfAborted(call, previous, mayHaveActed);
        sending = true;
        observed?.sending(); // a repeat counts as a retry once sent (not when given up during its wait)
        sentAt = this.runtime.clock.now();
        answer = await this.http.send({
          method: call.method,
          path: call.path,
          query: call.query,
          body,
          form: call.encoding === 'form',
          bearerToken: token,
        });
      } catch (error) {
        if (error instanceof PaymentAbortedError) throw error;
        // aborted while waiting for the token; once sending, the attempt's own failure stands
        if (!sending) this.throwIfAborted(call, previous, mayHaveActed);
        if (token === undefined && call.auth !== 'none') throw error; // from tokenForCall: final
        failure = this.scrub(error, call, [token, ...held]);
      } finally {
        // After a time-out or reset the request may still be read by the service a moment later: count it that late.
        // a 429's Retry-After holds the bucket's other calls too (they would only meet the same 429);
        // a call that ended before sending (aborted, no token) gives its slot back uncounted
        release(failure instanceof PaymentNetworkError && failure.mayHaveReachedService ? LATE_ARRIVAL_GRACE_MS : 0, rateLimitPauseMs(answer, this.options.maxRetryAfterMs), sending);
      }
      if (answer) {
        const success = answer.status >= 200 && answer.status < 300;
        // a 2xx whose body is no JSON of the service's (a proxy's page) may not have reached it: an unknown
        // outcome (`unreadable`), never resolved, for request() too (a subaccount payout); the token call reads its own
        const foreign = success && call.operation !== 'token' && isForeignSuccessBody(answer.status, answer.body, answer.mediaType);
        // scrubbed as a failure of the call: the account and the payment's idempotency key, to ask again under it
        if (foreign) unreadable = this.scrub(unreadSuccessError(call.method, call.path, answer.status, "its body is not the service's JSON", 'other'), call, [token, ...held]);
        if (success && !unreadable && !isErrorEnvelope(answer.body)) return { status: answer.status, body: answer.body, data: answerData(answer.body), sentAt };
        failure = unreadable ?? paymentErrorFromResponse({
          httpStatus: answer.status,
          body: answer.body,
          retryAfterSeconds: answer.retryAfterSeconds,
          method: call.method,
          path: call.path,
          idempotencyKey: call.idempotencyKey,
          account: this.options.account,
          redact: this.redactor(token, ...held),
          withholdText: call.operation === 'token' ? { requestFields: this.tokenRequestFields() } : undefined,
        });
      }
      if (!failure) throw new Error('unreachable: no answer and no failure');

      // A token refused with 401/403 means the service did nothing: safe for every policy. The
      // code alone is not enough: a 5xx carrying it says nothing of what the service did.
      if (token && !renewedToken && isTokenRefusal(failure)) {
        renewedToken = true;
        previous = failure; // an abort while the new token is fetched says the call was refused once
        this.tokens.invalidate(token);
        token = undefined;
        this.logger.warn?.(`${call.method} ${call.path} (account ${this.options.account}): token rejected (${failure.code}); retrying once with a new token`);
        observed?.attemptFailed(failure.code, 0, failure.httpStatus);
        continue;
      }
      const retryable = isRetryable(call.retry, failure);
      if (!retryable && isUnreadSuccess(failure) && failure !== unreadable) {
        // The service acted (a refund, a payout): resolve as a 2xx without a body rather than an
        // error a caller could take for "not done". Calls it is safe to send again retry instead.
        this.logger.warn?.(`${failure.message} (account ${this.options.account}): the service acted on it; resolved without the answer's fields`);
        return { status: failure.httpStatus, body: undefined, data: undefined, sentAt };
      }
      if (retry >= this.options.maxRetries || !retryable) throw this.finalFailure(failure, mayHaveActed);
      // a 429's, or a 503's (HTTP gives it there too: the service or a proxy asked for a pause)
      const retryAfterMs = retryAfterMsOf(failure);
      if (retryAfterMs !== undefined && retryAfterMs > this.options.maxRetryAfterMs) {
        const tooLong = failure instanceof PaymentRateLimitError ? retryAfterTooLongError(failure, retryAfterMs, this.options.maxRetryAfterMs) : failure;
        throw this.finalFailure(tooLong, mayHaveActed);
      }
      // a Retry-After of 0 (or a date already past) names no pause: the backoff, not a burst at a per-minute limit
      const delayMs = retryAfterMs !== undefined && retryAfterMs > 0 ? retryAfterMs : this.backoff(retry);
      retry++;
      previous = failure;
      mayHaveActed ||= !isRetryable('unsafe', failure);
      observed?.attemptFailed(failure.code, delayMs, failure.httpStatus);
      // a signal that fired while the attempt was on the wire ends the call here: an app's clock may not check it (a timer of up to maxRetryAfterMs)
      this.throwIfAborted(call, previous, mayHaveActed);
      this.logger.warn?.(`${call.method} ${call.path} (account ${this.options.account}) failed (${failure.code}); retry ${retry}/${this.options.maxRetries} in ${delayMs} ms`);
      await untilAborted(this.runtime.clock.sleep(delayMs, call.signal), call.signal).catch((error: unknown) => this.rethrow(error, call, previous, mayHaveActed));
      // a shared token is read again (free while cached): after a long Retry-After the one held may have expired
      if (call.auth === 'cached' && token !== undefined) [held, token] = [[...held, token], undefined];
    }
  }

  /**
   * The error the call ends with. A last attempt that surely did not act (a refused connection, a
   * 429, a token failure) does not undo an earlier one that may have: it says so (`mayHaveReachedService`).
   */
  private finalFailure<E extends PaymentApiError>(failure: E, mayHaveActed: boolean): E {
    return mayHaveActed ? withEarlierAttemptMayHaveActed(failure) : failure;
  }

  /** The call's abort when its signal fired (the wait was given up), else nothing. */
  private throwIfAborted(call: ServiceCall, previous: PaymentApiError | undefined, mayHaveActed: boolean): void {
    if (call.signal?.aborted) throw abortedCallError(call, previous, mayHaveActed, this.options.account, this.closing.signal.aborted);
  }

  /** Rethrows a failed wait's `error`, as the call's abort when its signal fired. */
  private rethrow(error: unknown, call: ServiceCall, previous: PaymentApiError | undefined, mayHaveActed: boolean): never {
    this.throwIfAborted(call, previous, mayHaveActed);
    throw error;
  }

  /**
   * The call's token. Token failures were already retried by the token call itself and are
   * final here, re-issued for THIS call, which was surely not sent (so a caller of a refund or
   * payout knows nothing happened), unless an earlier attempt `mayHaveActed`.
   */
  private async tokenForCall(call: ServiceCall, mayHaveActed: boolean): Promise<string | undefined> {
    try {
      return await this.tokenFor(call.auth, call.signal);
    } catch (error) {
      if (!(error instanceof PaymentApiError)) throw error;
      throw tokenFailureOfCall(error, call, mayHaveActed, this.options.account);
    }
  }

  /** A fresh token is this call's alone, so its request ends with the call's signal; a shared one goes on. */
  private async tokenFor(mode: TokenMode, signal: AbortSignal | undefined): Promise<string | undefined> {
    if (mode === 'none') return undefined;
    return mode === 'fresh' ? this.tokens.getFreshToken(signal) : this.tokens.getToken();
  }

  /** The names of the token call's body fields. */
  private tokenRequestFields(): string[] {
    const { tokenRequest } = this.options;
    return [tokenRequest.clientIdField, tokenRequest.clientSecretField];
  }

  private async requestToken(signal?: AbortSignal, once = false) {
    const { clientId, clientSecret, tokenRequest } = this.options;
    if (!clientId || !clientSecret) {
      throw missingCredentialsError(this.options.account);
    }
    this.logger.debug?.(`Requesting an access token (account ${this.options.account})`);
    const answer = await this.execute({
      method: 'POST',
      path: this.options.endpoints.token,
      body: { [tokenRequest.clientIdField]: clientId, [tokenRequest.clientSecretField]: clientSecret },
      encoding: tokenRequest.encoding,
      auth: 'none',
      limit: 'token',
      retry: once ? 'none' : 'token',
      operation: 'token',
      signal,
    });
    return { ...parseTokenData(answer.data, this.options.tokenResponse, this.options.endpoints.token, this.options.account), sentAt: answer.sentAt };
  }

  /**
   * One bucket per client for every scope. The service counts reads and creations per
   * access token; counting them per client is stricter (reads share the cached token
   * anyway, and each creation has its own token) and lets a call take its token only
   * once its slot is granted.
   */
  private limitKey(): string {
    return this.options.clientId ?? '';
  }

  /** Full-jitter exponential backoff, capped by `retryMaxDelayMs`. */
  private backoff(retry: number): number {
    const ceiling = Math.min(this.options.retryMaxDelayMs, this.options.retryBaseDelayMs * 2 ** retry);
    return Math.floor(this.runtime.random() * ceiling);
  }

  /** Summaries of the token manager and the limiter; never a token or a secret. */
  toJSON(): Record<string, unknown> {
    return { apiBaseUrl: this.options.apiBaseUrl, tokens: this.tokens.toJSON(), limiter: this.limiter.toJSON() };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentRequestExecutor', { apiBaseUrl: this.options.apiBaseUrl, tokens: this.tokens, limiter: this.limiter }, depth, options);
  }

  /**
   * Removes the client secret, webhook secrets, recent tokens and the call's own (`callTokens`) from error text.
   * The token a call sends is named on its own: a call that waited long (a `Retry-After`) may
   * hold one the token manager no longer lists as recent.
   */
  redact(text: string, ...callTokens: Array<string | undefined>): string {
    return this.redactor(...callTokens)(text);
  }

  /** `redact` for the texts of one failure (an answer's field errors): its patterns built once. */
  private redactor(...callTokens: Array<string | undefined>): (text: string) => string {
    return secretRedactor([this.options.clientSecret, ...this.options.webhookSecrets, ...this.tokens.knownTokens(), ...callTokens]);
  }

  private scrub(error: unknown, call: ServiceCall, tokens: Array<string | undefined>): PaymentApiError {
    if (error instanceof PaymentNetworkError) {
      return new PaymentNetworkError({
        code: error.code,
        account: this.options.account,
        message: this.redact(error.message, ...tokens),
        httpStatus: error.httpStatus,
        method: error.method,
        path: error.path,
        mayHaveReachedService: error.mayHaveReachedService,
        failure: error.failure,
        idempotencyKey: call.idempotencyKey,
      });
    }
    // Unknown throwables are not passed on: they may carry request details.
    return new PaymentServerError({
      account: this.options.account,
      code: PaymentClientErrorCode.UNEXPECTED_RESPONSE,
      message: `${call.method} ${call.path} failed inside the client: ${this.redact(error instanceof Error ? error.name : typeof error)}`,
      method: call.method,
      path: call.path,
      idempotencyKey: call.idempotencyKey,
    });
  }
}
