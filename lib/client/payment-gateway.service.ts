import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, Optional, type OnModuleDestroy } from '@nestjs/common';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { DEFAULT_PAYMENT_ENDPOINTS } from '../config/payment-options.defaults.js';
import { PAYMENT_RESOLVED_OPTIONS } from '../payment.constants.js';
import { PaymentClientErrorCode, PaymentServerError } from './payment-api.errors.js';
import type {
  CreatePaymentInput,
  CreatePaymentOptions,
  CreatePaymentResult,
  CreatePayoutInput,
  PaymentGateway,
  PaymentRecord,
  PaymentRequestOptions,
  PaymentRequestScope,
  PaymentResponse,
  PayoutRecord,
  PayoutResult,
  RefundPaymentInput,
  RefundRecord,
  RefundResult,
} from './payment-api.types.js';
import { PAYMENT_CLIENT_RUNTIME, systemPaymentClock, type PaymentClientRuntime } from './payment-client.clock.js';
import { PaymentHttpClient } from './payment-http.client.js';
import { InputChecker } from './payment-input.validation.js';
import { PaymentRequestExecutor, type ServiceCall } from './payment-request.executor.js';
import type { WireCreatePaymentRequest, WirePayoutRequest, WireRefundRequest } from './payment-wire.types.js';

/**
 * Client of the payment service (spec 4). Inject it anywhere the module is imported.
 * Every method validates its input first (a bad input throws `PaymentValidationError`
 * and sends nothing), then goes through tokens, client-side rate limits and the retry
 * policy of its kind; failures are `PaymentApiError` subclasses.
 */
@Injectable()
export class PaymentGatewayService implements OnModuleDestroy {
  private readonly logger = new Logger(PaymentGatewayService.name);
  private readonly http: PaymentHttpClient;
  private readonly executor: PaymentRequestExecutor;

  constructor(
    @Inject(PAYMENT_RESOLVED_OPTIONS) private readonly options: ResolvedPaymentOptions,
    @Optional() @Inject(PAYMENT_CLIENT_RUNTIME) runtime?: Partial<PaymentClientRuntime>,
  ) {
    this.http = new PaymentHttpClient(options.apiBaseUrl, options.httpTimeoutMs);
    this.executor = new PaymentRequestExecutor(
      options,
      this.http,
      { clock: runtime?.clock ?? systemPaymentClock, random: runtime?.random ?? Math.random },
      this.logger,
    );
  }

  /**
   * `POST /payment/create`. Gets a new token first (spec 5.2). The idempotency key
   * (generated when absent) is reused on every retry, so one call creates at most one
   * payment; errors carry it as `idempotencyKey` for a later manual retry.
   */
  async createPayment(input: CreatePaymentInput, options: CreatePaymentOptions = {}): Promise<CreatePaymentResult> {
    const check = new InputChecker();
    const body = this.paymentBody(check, input);
    const idempotencyKey =
      options.idempotencyKey === undefined ? randomUUID() : check.identifier('idempotencyKey', options.idempotencyKey);
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
    });
    const data = this.requireRecord(answer.data, 'trxId', 'POST', path, idempotencyKey);
    return {
      ...(data as PaymentRecord),
      token: data.token as string,
      pending: answer.status === 202,
      idempotencyKey: idempotencyKey!,
      httpStatus: answer.status,
    };
  }

  /** `GET /payment/status?trx_id=…`: the canonical record; its `status` is the source of truth. */
  async getPaymentStatus(trxId: string): Promise<PaymentRecord> {
    const check = new InputChecker();
    check.identifier('trxId', trxId);
    check.throwIfInvalid('getPaymentStatus');
    const { endpoints } = this.options;
    const answer = await this.executor.execute({
      method: 'GET',
      path: endpoints.paymentStatus,
      query: { [endpoints.paymentStatusParam]: trxId },
      auth: 'cached',
      limit: 'read',
      retry: 'safe',
    });
    return this.requireRecord(answer.data, 'trxId', 'GET', endpoints.paymentStatus) as PaymentRecord;
  }

  /** `GET /payments/gateways`. */
  async listGateways(): Promise<PaymentGateway[]> {
    const path = this.options.endpoints.gateways;
    const answer = await this.executor.execute({ method: 'GET', path, auth: 'cached', limit: 'read', retry: 'safe' });
    const data = answer.data as unknown;
    if (Array.isArray(data)) return data as PaymentGateway[];
    const nested = (data as { gateways?: unknown } | null)?.gateways;
    if (Array.isArray(nested)) return nested as PaymentGateway[];
    throw this.unexpected('GET', path, 'a list of gateways');
  }

  /**
   * `POST /payment/{trx_id}/refund`. Not idempotent on the service: retried only when
   * the service surely did not act (429, refused connection). After a time-out, a reset
   * or a 5xx the error is thrown; check `getPaymentStatus` / `getRefund` before trying again.
   */
  async refundPayment(trxId: string, input: RefundPaymentInput = {}): Promise<RefundResult> {
    const check = new InputChecker();
    check.identifier('trxId', trxId);
    const amount = check.amount('amount', input?.amount, false);
    const reason = check.optionalString('reason', input?.reason);
    const extra = check.optionalObject('extra', input?.extra);
    check.throwIfInvalid('refundPayment');
    const body: WireRefundRequest = { ...extra };
    if (amount !== undefined) body.amount = amount;
    if (reason !== undefined) body.reason = reason;
    const path = this.fillPath(this.options.endpoints.refund, '{trx_id}', trxId);
    const answer = await this.executor.execute({
      method: 'POST',
      path,
      body,
      auth: 'cached',
      limit: 'money-movement',
      retry: 'unsafe',
    });
    const data = this.requireRecord(answer.data, 'refundUid', 'POST', path);
    return { ...(data as RefundRecord), httpStatus: answer.status };
  }

  /** `GET /refund/{refund_uid}` (path assumed; `endpoints.refundLookup`). */
  async getRefund(refundUid: string): Promise<RefundRecord> {
    const check = new InputChecker();
    check.identifier('refundUid', refundUid);
    check.throwIfInvalid('getRefund');
    const path = this.fillPath(this.options.endpoints.refundLookup, '{refund_uid}', refundUid);
    const answer = await this.executor.execute({ method: 'GET', path, auth: 'cached', limit: 'money-movement', retry: 'safe' });
    return this.requireRecord(answer.data, 'refundUid', 'GET', path) as RefundRecord;
  }

  /** `POST /payout`: 201, or 202 (`pendingApproval: true`). Same retry rule as refunds. */
  async createPayout(input: CreatePayoutInput): Promise<PayoutResult> {
    const check = new InputChecker();
    const amount = check.amount('amount', input?.amount);
    const currency = check.currency('currency', input?.currency);
    const country = check.country('country', input?.country);
    const recipient = check.optionalObject('recipient', input?.recipient, true);
    const reference = check.optionalString('reference', input?.reference);
    const extra = check.optionalObject('extra', input?.extra);
    check.throwIfInvalid('createPayout');
    const body: WirePayoutRequest = { ...extra, amount: amount!, currency: currency!, recipient: recipient! };
    if (country !== undefined) body.country = country;
    if (reference !== undefined) body.reference = reference;
    const path = this.options.endpoints.payout;
    const answer = await this.executor.execute({
      method: 'POST',
      path,
      body,
      auth: 'cached',
      limit: 'money-movement',
      retry: 'unsafe',
    });
    const data = this.requireRecord(answer.data, 'payoutUid', 'POST', path);
    return { ...(data as PayoutRecord), pendingApproval: answer.status === 202, httpStatus: answer.status };
  }

  /** `GET /payout/{payout_uid}` (path assumed; `endpoints.payoutLookup`). */
  async getPayout(payoutUid: string): Promise<PayoutRecord> {
    const check = new InputChecker();
    check.identifier('payoutUid', payoutUid);
    check.throwIfInvalid('getPayout');
    const path = this.fillPath(this.options.endpoints.payoutLookup, '{payout_uid}', payoutUid);
    const answer = await this.executor.execute({ method: 'GET', path, auth: 'cached', limit: 'money-movement', retry: 'safe' });
    return this.requireRecord(answer.data, 'payoutUid', 'GET', path) as PayoutRecord;
  }

  /**
   * Any other call (subaccounts, endpoints the spec does not show) with the same
   * tokens, limits, retries and errors. Non-GET requests are treated as not
   * idempotent unless `idempotent: true`. Paths under `endpoints.subaccountPrefix`
   * count in the refunds/payouts limit unless `scope` says otherwise.
   */
  async request<T = unknown>(options: PaymentRequestOptions): Promise<PaymentResponse<T>> {
    const check = new InputChecker();
    const method = typeof options?.method === 'string' ? options.method.toUpperCase() : '';
    if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) check.add('method', 'must be GET, POST, PUT, PATCH or DELETE');
    if (
      typeof options?.path !== 'string' ||
      !options.path.startsWith('/') ||
      /[\s?#\\]/.test(options.path) ||
      options.path.includes('//') ||
      options.path.split('/').some((segment) => segment === '.' || segment === '..')
    ) {
      check.add('path', 'must be a path under the API base starting with "/", without query, fragment, spaces or dot segments');
    }
    const scope = options?.scope ?? this.defaultScope(method, options?.path);
    if (!['read', 'create-payment', 'money-movement', 'none'].includes(scope)) {
      check.add('scope', "must be 'read', 'create-payment', 'money-movement' or 'none'");
    }
    check.throwIfInvalid('request');
    const idempotent = options.idempotent ?? method === 'GET';
    const call: ServiceCall = {
      method,
      path: options.path,
      query: options.query,
      body: options.body,
      auth: options.authenticated === false ? 'none' : scope === 'create-payment' ? 'fresh' : 'cached',
      limit: scope,
      retry: idempotent ? (method === 'GET' ? 'safe' : 'keyed') : 'unsafe',
    };
    const answer = await this.executor.execute(call);
    return { httpStatus: answer.status, data: answer.data as T, body: answer.body };
  }

  /** Subaccount operations share the refunds/payouts limit, reads included; other GETs are reads. */
  private defaultScope(method: string, path: unknown): PaymentRequestScope {
    const prefix = this.options.endpoints.subaccountPrefix ?? DEFAULT_PAYMENT_ENDPOINTS.subaccountPrefix;
    if (typeof path === 'string' && path.startsWith(prefix)) return 'money-movement';
    return method === 'GET' ? 'read' : 'money-movement';
  }

  onModuleDestroy(): void {
    this.http.close();
  }

  private paymentBody(check: InputChecker, input: CreatePaymentInput): Omit<WireCreatePaymentRequest, 'idempotency_key'> {
    const amount = check.amount('amount', input?.amount);
    const currency = check.currency('currency', input?.currency);
    const country = check.country('country', input?.country);
    const extra = check.optionalObject('extra', input?.extra);
    const customer = check.optionalObject('customer', input?.customer);
    const body: Omit<WireCreatePaymentRequest, 'idempotency_key'> = { ...extra, amount: amount!, currency: currency! };
    const strings = { custom: 'custom', gateway: 'gateway', returnUrl: 'return_url', cancelUrl: 'cancel_url' } as const;
    for (const [field, wire] of Object.entries(strings)) {
      const value = check.optionalString(field, (input as unknown as Record<string, unknown> | undefined)?.[field]);
      if (value !== undefined) body[wire] = value;
    }
    if (country !== undefined) body.country = country;
    if (customer !== undefined) body.customer = customer;
    if (input?.splits !== undefined) {
      if (!Array.isArray(input.splits)) {
        check.add('splits', 'must be an array');
      } else {
        body.splits = input.splits.map((split, i) => ({
          subaccount_id: check.identifier(`splits[${i}].subaccountId`, split?.subaccountId) ?? '',
          amount: check.amount(`splits[${i}].amount`, split?.amount) ?? '',
        }));
      }
    }
    return body;
  }

  private fillPath(template: string, placeholder: string, value: string): string {
    return template.split(placeholder).join(encodeURIComponent(value));
  }

  private requireRecord(data: unknown, idField: string, method: string, path: string, idempotencyKey?: string): Record<string, unknown> {
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
      const record = data as Record<string, unknown>;
      if (typeof record[idField] === 'string' && record[idField] !== '') return record;
    }
    throw this.unexpected(method, path, `data.${idField}`, idempotencyKey);
  }

  private unexpected(method: string, path: string, expected: string, idempotencyKey?: string): PaymentServerError {
    return new PaymentServerError({
      code: PaymentClientErrorCode.UNEXPECTED_RESPONSE,
      message:
        `${method} ${path} succeeded but the answer has no ${expected}` +
        (idempotencyKey ? '; the payment may exist: retry with the same idempotencyKey' : ''),
      method,
      path,
      idempotencyKey,
    });
  }
}
