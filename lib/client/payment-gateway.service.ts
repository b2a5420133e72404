import { randomUUID } from 'node:crypto';
import { inspect, type InspectOptions } from 'node:util';
import { Inject, Injectable, Logger, Optional, type OnApplicationShutdown } from '@nestjs/common';
import type { PaymentResponseFields, ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PAYMENT_ACCOUNT_OPTIONS, PAYMENT_CLIENT_RUNTIME } from '../payment.constants.js';
import { PaymentClientErrorCode, PaymentServerError } from './payment-api.errors.js';
import type {
  CreatePaymentInput,
  CreatePaymentOptions,
  CreatePaymentResult,
  CreatePayoutInput,
  PaymentCallOptions,
  PaymentGateway,
  PaymentRequestOptions,
  PaymentRequestScope,
  PaymentResponse,
  PaymentStatusResult,
  PayoutRecord,
  PayoutResult,
  RefundPaymentInput,
  RefundRecord,
  RefundResult,
} from './payment-api.types.js';
import { paymentClientRuntime, type PaymentClientRuntime } from './payment-client.clock.js';
import { neverThrowingLogger } from '../common/never-throwing-logger.util.js';
import { matchesPathTemplate } from '../common/api-path.util.js';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { PaymentHttpClient } from './payment-http.client.js';
import { InputChecker } from './payment-input.validation.js';
import { PaymentIpRateLimits } from './payment-rate-limiter.js';
import { PaymentRequestExecutor } from './payment-request.executor.js';
import type { ServiceAnswer } from './payment-service-call.interface.js';
import { paymentRequestBody, payoutRequestBody, refundRequestBody, requestCall } from './payment-request.bodies.js';
import { envelopeData, readGatewayList, readResponseField, readServiceRecord, recordOf, sameServiceId, type PaymentResponseField } from './payment-response.reader.js';

/** Each client's HTTP client, for `requestsOnTheWire` (not a member: no part of the public class). */
const httpClients = new WeakMap<PaymentGatewayService, PaymentHttpClient>();

/** The requests `client` has on the wire now: a webhook shutdown waits for them before its store closes. */
export function requestsOnTheWire(client: PaymentGatewayService): number {
  return httpClients.get(client)?.requestsOnTheWire ?? 0;
}

/**
 * Client of the payment service. Inject it anywhere the module is imported.
 * Every method validates its input first (a bad input throws `PaymentValidationError`
 * and sends nothing), then goes through tokens, client-side rate limits and the retry
 * policy of its kind; failures are `PaymentApiError` subclasses.
 * @publicApi
 */
@Injectable()
export class PaymentGatewayService implements OnApplicationShutdown {
  private readonly logger = neverThrowingLogger(new Logger(PaymentGatewayService.name));
  private readonly http: PaymentHttpClient;
  private readonly executor: PaymentRequestExecutor;
  private readonly fields: PaymentResponseFields;
  /** The status fields of an answer without `data`: the envelope's own `status` left out. */
  private readonly flatStatusFields: readonly string[];

  constructor(
    @Inject(PAYMENT_ACCOUNT_OPTIONS) private readonly options: ResolvedPaymentOptions,
    @Optional() @Inject(PAYMENT_CLIENT_RUNTIME) runtime?: Partial<PaymentClientRuntime>,
    // the per-IP token limit's buckets, shared by the app's accounts (a standalone client has its own)
    @Optional() @Inject(PaymentIpRateLimits) ipRateLimits?: PaymentIpRateLimits,
  ) {
    this.fields = options.responseFields;
    this.flatStatusFields = this.fields.status.filter((name) => name !== 'status');
    this.http = new PaymentHttpClient(options.apiBaseUrl, options.httpTimeoutMs);
    httpClients.set(this, this.http);
    this.executor = new PaymentRequestExecutor(
      options,
      this.http,
      paymentClientRuntime(runtime),
      this.logger,
      ipRateLimits,
    );
  }

  /**
   * `POST /payment/create`. Gets a new token first (the service wants one per payment). The idempotency key
   * (generated when absent) is reused on every retry, so one call creates at most one
   * payment; errors carry it as `idempotencyKey` for a later manual retry.
   */
  async createPayment(input: CreatePaymentInput, options?: CreatePaymentOptions): Promise<CreatePaymentResult> {
    const check = new InputChecker(this.options.account);
    const body = paymentRequestBody(check, input);
    const callOptions = check.inputObject('options', options, ['idempotencyKey', 'signal'], false);
    // only a left-out key means "generate one": `{ idempotencyKey: order.paymentKey }` whose value
    // got lost would otherwise get a new key per call, and a retry would make a second payment
    const keyLeftOut = callOptions === undefined || !('idempotencyKey' in callOptions);
    const idempotencyKey = keyLeftOut ? randomUUID() : check.identifier('idempotencyKey', callOptions.idempotencyKey, false);
    const signal = check.signal(options?.signal);
    check.throwIfInvalid('createPayment');
    const path = this.options.endpoints.createPayment;
    const answer = await this.executor.execute({
      method: 'POST',
      path,
      body: { ...body, idempotency_key: idempotencyKey! },
      auth: 'fresh',
      limit: 'create-payment',
      retry: 'keyed',
      idempotencyKey,
      operation: 'create_payment',
      signal,
    });
    const { record, id } = this.readRecord(answer, 'trxId');
    if (id === undefined) this.warnNoId('POST', path, answer.status, 'trxId', `the payment was accepted (idempotencyKey ${idempotencyKey})`);
    // typed `token?: string`: a token of another type stays in raw only
    if (typeof record.token !== 'string') delete record.token;
    return {
      ...record,
      pending: answer.status === 202,
      idempotencyKey: idempotencyKey!,
      httpStatus: answer.status,
      raw: answer.body,
    } as CreatePaymentResult;
  }

  /**
   * `GET /payment/status?trx_id=…`: the canonical record; its `status` is the source of
   * truth. `trxId` is the asked id when the answer names none; `pending` is true on 202.
   * An answer without a status in its `data` object (or without `data`) is an
   * `UNEXPECTED_RESPONSE` error (nothing was changed).
   */
  async getPaymentStatus(trxId: string, options?: PaymentCallOptions): Promise<PaymentStatusResult> {
    const check = new InputChecker(this.options.account);
    check.identifier('trxId', trxId, false); // a query value, not a path segment
    const signal = check.callOptions(options);
    check.throwIfInvalid('getPaymentStatus');
    const { endpoints } = this.options;
    const answer = await this.executor.execute({
      method: 'GET',
      path: endpoints.paymentStatus,
      query: { [endpoints.paymentStatusParam]: trxId },
      auth: 'cached',
      limit: 'read',
      retry: 'safe',
      operation: 'get_payment_status',
      signal,
    });
    // its status decides what the caller does: read from `data` alone, not from a body that has none
    const { record, status, answeredId } = readServiceRecord(envelopeData(answer.body), this.fields, 'trxId', trxId);
    // another payment's status (the query parameter's name is not in the spec) would mark this one paid
    if (answeredId !== undefined && !sameServiceId(answeredId, trxId)) {
      throw this.unexpected('GET', endpoints.paymentStatus, `the status of payment ${trxId} (it is about ${answeredId}; see endpoints.paymentStatusParam)`);
    }
    if (status === undefined) {
      throw this.unexpected('GET', endpoints.paymentStatus, `a payment status (data.${this.fields.status.join(' or data.')}; see responseFields.status)`);
    }
    return {
      ...record,
      trxId: record.trxId as string,
      status,
      pending: answer.status === 202,
      httpStatus: answer.status,
      raw: answer.body,
    };
  }

  /**
   * `GET /payments/gateways`. Accepts a list, an object holding one (`gateways`, `items`,
   * … or its only list) or a map of id → gateway; gateways given as plain strings become `{ id }`.
   */
  async listGateways(options?: PaymentCallOptions): Promise<PaymentGateway[]> {
    const check = new InputChecker(this.options.account);
    const signal = check.callOptions(options);
    check.throwIfInvalid('listGateways');
    const path = this.options.endpoints.gateways;
    const answer = await this.executor.execute({ method: 'GET', path, auth: 'cached', limit: 'read', retry: 'safe', operation: 'list_gateways', signal });
    const gateways = readGatewayList(answer.data);
    if (!gateways) throw this.unexpected('GET', path, 'a list of gateways');
    return gateways;
  }

  /**
   * `POST /payment/{trx_id}/refund`. Not idempotent on the service: retried only when
   * the service surely did not act (429, refused connection). After a time-out, a reset
   * or a 5xx the error is thrown; check `getPaymentStatus` / `getRefund` before trying again.
   */
  async refundPayment(trxId: string, input?: RefundPaymentInput, options?: PaymentCallOptions): Promise<RefundResult> {
    const check = new InputChecker(this.options.account);
    check.identifier('trxId', trxId);
    const body = refundRequestBody(check, input);
    const signal = check.callOptions(options);
    check.throwIfInvalid('refundPayment');
    const path = this.fillPath(this.options.endpoints.refund, '{trx_id}', trxId);
    const answer = await this.executor.execute({
      method: 'POST',
      path,
      body,
      auth: 'cached',
      limit: 'money-movement',
      retry: 'unsafe',
      operation: 'refund_payment',
      signal,
    });
    const { record, id } = this.readRecord(answer, 'refundUid');
    record.trxId = readResponseField(recordOf(answer.data), this.fields.trxId) ?? trxId;
    if (id === undefined) this.warnNoId('POST', path, answer.status, 'refundUid', 'the refund was accepted: do not send it again');
    return { ...record, httpStatus: answer.status, raw: answer.body } as RefundResult;
  }

  /** `GET /refund/{refund_uid}` (path assumed; `endpoints.refundLookup`). */
  async getRefund(refundUid: string, options?: PaymentCallOptions): Promise<RefundRecord> {
    const check = new InputChecker(this.options.account);
    check.identifier('refundUid', refundUid);
    const signal = check.callOptions(options);
    check.throwIfInvalid('getRefund');
    const path = this.fillPath(this.options.endpoints.refundLookup, '{refund_uid}', refundUid);
    const answer = await this.executor.execute({ method: 'GET', path, auth: 'cached', limit: 'money-movement', retry: 'safe', operation: 'get_refund', signal });
    return this.readRecord(answer, 'refundUid', refundUid, path).record as RefundRecord;
  }

  /** `POST /payout`: 201, or 202 (`pendingApproval: true`). Same retry rule as refunds. */
  async createPayout(input: CreatePayoutInput, options?: PaymentCallOptions): Promise<PayoutResult> {
    const check = new InputChecker(this.options.account);
    const body = payoutRequestBody(check, input);
    const signal = check.callOptions(options);
    check.throwIfInvalid('createPayout');
    const path = this.options.endpoints.payout;
    const answer = await this.executor.execute({
      method: 'POST',
      path,
      body,
      auth: 'cached',
      limit: 'money-movement',
      retry: 'unsafe',
      operation: 'create_payout',
      signal,
    });
    const { record, id } = this.readRecord(answer, 'payoutUid');
    if (id === undefined) this.warnNoId('POST', path, answer.status, 'payoutUid', 'the payout was accepted: do not send it again');
    return { ...record, pendingApproval: answer.status === 202, httpStatus: answer.status, raw: answer.body } as PayoutResult;
  }

  /** `GET /payout/{payout_uid}` (path assumed; `endpoints.payoutLookup`). */
  async getPayout(payoutUid: string, options?: PaymentCallOptions): Promise<PayoutRecord> {
    const check = new InputChecker(this.options.account);
    check.identifier('payoutUid', payoutUid);
    const signal = check.callOptions(options);
    check.throwIfInvalid('getPayout');
    const path = this.fillPath(this.options.endpoints.payoutLookup, '{payout_uid}', payoutUid);
    const answer = await this.executor.execute({ method: 'GET', path, auth: 'cached', limit: 'money-movement', retry: 'safe', operation: 'get_payout', signal });
    return this.readRecord(answer, 'payoutUid', payoutUid, path).record as PayoutRecord;
  }

  /**
   * Any other call (subaccounts, endpoints the service does not publish) with the same
   * tokens, limits, retries and errors. Non-GET requests are treated as not
   * idempotent unless `idempotent: true`. Paths under `endpoints.subaccountPrefix`, and GETs of
   * the refund and payout lookup paths, count in the refunds/payouts limit unless `scope` says otherwise.
   */
  async request<T = unknown>(options: PaymentRequestOptions): Promise<PaymentResponse<T>> {
    const call = requestCall(new InputChecker(this.options.account), options, (method, path) => this.defaultScope(method, path));
    const answer = await this.executor.execute(call);
    return { httpStatus: answer.status, data: answer.data as T, body: answer.body };
  }

  /**
   * A POST to the create-payment path creates a payment (its limit, a new token each time); subaccount operations and
   * refund/payout lookups share the refunds/payouts limit (as the typed lookups do); other GETs are reads.
   */
  private defaultScope(method: string, path: unknown): PaymentRequestScope {
    if (method === 'POST' && typeof path === 'string' && matchesPathTemplate(path, this.options.endpoints.createPayment)) return 'create-payment';
    if (method !== 'GET') return 'money-movement';
    if (typeof path !== 'string') return 'read';
    const { subaccountPrefix, refundLookup, payoutLookup } = this.options.endpoints;
    const shared = path.startsWith(subaccountPrefix) || matchesPathTemplate(path, refundLookup) || matchesPathTemplate(path, payoutLookup);
    return shared ? 'money-movement' : 'read';
  }

  /**
   * For health checks: resolves once the client holds a valid access token, asking for one only
   * when none is cached, with one attempt and no retries, and answering a failure again for 30 s
   * without a new request unless a token was had since (probes stay within the token limit);
   * rejects with the token call's error. `signal` gives up the wait for a rate-limit slot.
   */
  async checkAuthentication(options?: PaymentCallOptions): Promise<void> {
    const check = new InputChecker(this.options.account);
    const signal = check.callOptions(options);
    check.throwIfInvalid('checkAuthentication');
    await this.executor.checkToken(signal);
  }

  /**
   * Closes pooled sockets. At application shutdown, not module destroy: Nest drains the HTTP
   * server in between, and a webhook handler still running there may be sending a refund.
   */
  async onApplicationShutdown(): Promise<void> {
    // waiting calls first: a retry that woke up would open a new connection after the pools closed;
    // requests already on the wire run to their answer (or time-out) before the sockets close
    this.executor.close();
    await this.http.close();
  }

  /** Where the client talks to and its state, never a token or a secret (safe to log). */
  toJSON(): Record<string, unknown> {
    const { apiBaseUrl, environment, clientId } = this.options;
    return { apiBaseUrl, environment, clientId, http: this.http.toJSON(), executor: this.executor.toJSON() };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    const { apiBaseUrl, environment, clientId } = this.options;
    return inspectSummary('PaymentGatewayService', { apiBaseUrl, environment, clientId, http: this.http, executor: this.executor }, depth, options);
  }

  private fillPath(template: string, placeholder: string, value: string): string {
    return template.split(placeholder).join(encodeURIComponent(value));
  }

  /**
   * `readServiceRecord` with this client's `responseFields`. A body without `data` is read as
   * the record (its ids tell the caller not to send again), except its `status`: that is the
   * envelope's own (`'success'`), not the record's.
   */
  private readRecord(answer: ServiceAnswer, idField: Exclude<PaymentResponseField, 'status'>, knownId?: string, lookupPath?: string) {
    const read = readServiceRecord(answer.data, this.fields, idField, knownId, envelopeData(answer.body) !== undefined ? this.fields.status : this.flatStatusFields);
    // a lookup answered with another record: its status would be read as this one's (after a mayHaveReachedService error too)
    if (lookupPath !== undefined && read.answeredId !== undefined && !sameServiceId(read.answeredId, knownId!)) {
      throw this.unexpected('GET', lookupPath, `${idField} ${knownId} (it is about ${read.answeredId}; see responseFields.${idField})`);
    }
    return read;
  }

  /** After a 2xx the service acted: a missing id is logged, never thrown (it would look like a failure). */
  private warnNoId(method: string, path: string, httpStatus: number, idField: Exclude<PaymentResponseField, 'status'>, outcome: string): void {
    this.logger.warn(
      `${method} ${path} (account ${this.options.account}) answered ${httpStatus} without an id in data.${this.fields[idField].join(' or data.')}; ` +
        `${outcome}. The result has ${idField} undefined and the whole answer in raw; set responseFields.${idField} to the field the service uses`,
    );
  }

  private unexpected(method: string, path: string, expected: string): PaymentServerError {
    // `expected` may quote an id the service answered with: service text, redacted as every error's is
    const message = this.executor.redact(`${method} ${path} succeeded but the answer does not hold ${expected}`);
    return new PaymentServerError({ account: this.options.account, code: PaymentClientErrorCode.UNEXPECTED_RESPONSE, message, method, path });
  }
}
