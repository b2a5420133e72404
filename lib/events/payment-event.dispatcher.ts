import { inspect, type InspectOptions } from 'node:util';
import { Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { type ContextId, ContextIdFactory, ModuleRef } from '@nestjs/core';
import { STATIC_CONTEXT } from '@nestjs/core/injector/constants.js';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { Tracer } from '@opentelemetry/api';
import type { PaymentGatewayService } from '../client/payment-gateway.service.js';
import { readResponseField, recordOf } from '../client/payment-response.reader.js';
import { asPromise, isThenable } from '../common/as-promise.util.js';
import { errorMessage } from '../common/error-message.util.js';
import { inspectSummary } from '../common/inspect-summary.util.js';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import {
  DEFAULT_PAYMENT_ACCOUNT,
  PAYMENT_ACCOUNT_CLIENT,
  PAYMENT_ACCOUNT_OPTIONS,
  PAYMENT_EVENT_NAMESPACE,
} from '../payment.constants.js';
import { clientErrorSummary } from '../telemetry/client-error-summary.js';
import { traceHandler } from '../telemetry/payment-handler.tracing.js';
import { paymentTelemetry } from '../telemetry/payment-telemetry.js';
import { metricEventType } from '../telemetry/payment-telemetry.names.js';
import { RepeatableLogLines } from '../telemetry/repeatable-log-lines.js';
import type { PaymentEventHandler, PaymentEventInvocationContext } from './payment-event-handler.interface.js';
import { PaymentEventHandlerRegistry } from './payment-event-handler.registry.js';
import {
  PaymentEventHandlerError,
  PaymentEventReconciliationError,
  type PaymentEventHandlerFailure,
} from './payment-event.errors.js';
import {
  type AnyPaymentEvent,
  type PaymentEventEnvelope,
  type PaymentEventExtras,
  isKnownPaymentEventType,
  paymentEventFamilyOf,
} from './payment-event.types.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/**
 * Name under which an event type is re-emitted on the host's EventEmitter2:
 * `payment-gateway.payment.succeeded`.
 * @publicApi
 */
export function paymentEventEmitterName(eventType: string): string {
  return `${PAYMENT_EVENT_NAMESPACE}.${eventType}`;
}

const STATIC_INVOCATION: PaymentEventInvocationContext = Object.freeze({ contextId: STATIC_CONTEXT });

/** Unhandled types are warned about once each; the set is bounded in case of a flood of new types. */
const MAX_WARNED_TYPES = 256;

/**
 * Delivers one verified, deduplicated event of one account to every matching
 * `@OnPaymentEvent` handler and to the host's `@OnEvent('payment-gateway.<type>')`
 * listeners (when the host has EventEmitterModule), and resolves only when all of them
 * succeeded. One per account.
 */
@Injectable()
export class PaymentEventDispatcher implements OnModuleInit {
  private readonly logger = new PaymentLogger('PaymentEvents');
  private readonly warnedUnhandled = new Set<string>();
  private strategyFailureWarned = false;
  /** Handler failures said at `error`, per handler and event (see `RepeatableLogLines`). */
  private readonly failureLines = new RepeatableLogLines('error', 1000);
  /** The host's EventEmitter2, if it has EventEmitterModule. */
  private eventEmitter: EventEmitter2 | undefined;

  constructor(
    private readonly registry: PaymentEventHandlerRegistry,
    private readonly moduleRef: ModuleRef,
    @Optional() eventEmitter?: EventEmitter2,
    @Optional() @Inject(PAYMENT_ACCOUNT_OPTIONS) private readonly options?: ResolvedPaymentOptions,
    // This account's client: with several accounts each reconciles with its own credentials.
    @Optional() @Inject(PAYMENT_ACCOUNT_CLIENT) private readonly client?: PaymentGatewayService,
  ) {
    this.eventEmitter = workingEmitter(eventEmitter);
  }

  /**
   * A host `EventEmitterModule.forRoot({ global: false })` is not injectable here (its module is
   * the host's): found in the app instead, or its listeners would never hear an event.
   */
  onModuleInit(): void {
    if (this.eventEmitter !== undefined) return;
    try {
      this.eventEmitter = workingEmitter(this.moduleRef.get(EventEmitter2, { strict: false }));
    } catch {
      // the host has no EventEmitterModule: the handlers alone hear events
    }
  }

  /** The host's EventEmitter2 (a non-global one too, once the module is initialised): the queue worker's dead-letter announcements go there. */
  get hostEventEmitter(): EventEmitter2 | undefined {
    return this.eventEmitter;
  }

  /** The account only: `moduleRef` reaches the Nest container, where the raw `forRoot()` options (secrets included) are. */
  toJSON(): Record<string, unknown> {
    return { account: this.options?.account ?? DEFAULT_PAYMENT_ACCOUNT };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentEventDispatcher', this.toJSON(), depth, options);
  }

  /**
   * Runs every handler matching `event.eventType` (exact, `'<family>.*'`, `'*'`; an unknown
   * type reaches `'*'` only) concurrently and waits for all of them.
   *
   * @throws PaymentEventReconciliationError when `reconcile` is on and the payment status
   *   could not be read (no handler ran).
   * @throws PaymentEventHandlerError when any handler or host listener failed (the others
   *   still ran). Either way the delivery must not be answered 2xx.
   */
  async dispatch(envelope: PaymentEventEnvelope & Partial<PaymentEventExtras>): Promise<void> {
    const event = envelope as AnyPaymentEvent;
    event.account ??= this.options?.account ?? DEFAULT_PAYMENT_ACCOUNT;
    event.receivedAt ??= new Date();
    const handlers = this.registry.match(event.eventType, event.account);
    const emitterName = this.eventEmitter !== undefined ? paymentEventEmitterName(event.eventType) : undefined;
    // No EventEmitter2 work at all when nobody listens.
    const emit = emitterName !== undefined && hasListeners(this.eventEmitter!, emitterName);
    // a status call only for someone who reads its answer: an unheard event is acknowledged as is
    if (this.options?.reconcile && (handlers.length > 0 || emit)) {
      await this.reconcile(event);
    }
    // looked up once per event: each handler's span (when the host traces) comes from it
    const tracer = paymentTelemetry.tracer();

    if (handlers.length === 1 && !emit) {
      // The common case, without Promise.allSettled: one handler, awaited only if it is async.
      const handler = handlers[0]!;
      try {
        const result = this.invoke(tracer, handler, event, handler.scoped ? this.scopedContext(event) : STATIC_INVOCATION);
        if (isThenable(result)) await result;
      } catch (error) {
        this.fail(event, [{ handler: handler.name, error }]);
      }
      return;
    }
    if (handlers.length === 0 && !emit) {
      this.warnUnhandled(event);
      return;
    }

    let context = STATIC_INVOCATION;
    for (const handler of handlers) {
      if (handler.scoped) {
        context = this.scopedContext(event);
        break;
      }
    }
    const names: string[] = [];
    const runs: Promise<unknown>[] = [];
    for (const handler of handlers) {
      names.push(handler.name);
      runs.push(asPromise(() => this.invoke(tracer, handler, event, context)));
    }
    if (emit) {
      const listeners = `EventEmitter2:${emitterName}`;
      names.push(listeners);
      // every listener runs to its end; one with `suppressErrors: false` that fails fails the delivery too
      // the span name with a bounded type (names are grouped on); the handler attribute keeps it whole
      const spanName = tracer && `EventEmitter2:${paymentEventEmitterName(metricEventType(event.eventType))}`;
      runs.push(tracer ? traceHandler(tracer, listeners, event, () => this.emit(emitterName!, event), spanName) : this.emit(emitterName!, event));
    }
    const results = await Promise.allSettled(runs);
    const failures: PaymentEventHandlerFailure[] = [];
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      if (result.status === 'rejected') failures.push({ handler: names[i]!, error: result.reason });
    }
    if (failures.length > 0) this.fail(event, failures);
  }

  /** One handler's run, in a span of its own when the host traces (no closure otherwise). */
  private invoke(
    tracer: Tracer | undefined,
    handler: PaymentEventHandler,
    event: AnyPaymentEvent,
    context: PaymentEventInvocationContext,
  ): unknown {
    if (tracer === undefined) return handler.invoke(event, context);
    return traceHandler(tracer, handler.name, event, () => handler.invoke(event, context));
  }

  /**
   * A context id with the event registered as REQUEST: request-scoped handler providers
   * that inject REQUEST receive the event, and share one instance per event. Made through the
   * host's `ContextIdFactory.apply()` strategy where it has one, as Nest does for HTTP requests:
   * durable providers then live once per tenant, with the strategy's payload as REQUEST.
   */
  private scopedContext(event: AnyPaymentEvent): PaymentEventInvocationContext {
    let contextId: ContextId;
    try {
      contextId = ContextIdFactory.getByRequest(event);
    } catch (error) {
      // a strategy written for HTTP requests (it reads `request.headers`): the handlers still run
      contextId = ContextIdFactory.create();
      this.warnStrategyFailed(error);
    }
    this.moduleRef.registerRequestByContextId(event, contextId);
    return { contextId };
  }

  private emit(name: string, event: AnyPaymentEvent): Promise<void> {
    return emitToEach(this.eventEmitter!, name, event);
  }

  private fail(event: AnyPaymentEvent, failures: PaymentEventHandlerFailure[]): never {
    for (const failure of failures) {
      const error = failure.error;
      // a client error of this module by class, code and status, its stack by its frames: its
      // message quotes the service's answer, which may echo request fields (an account number)
      const summary = clientErrorSummary(error);
      const stack = error instanceof Error ? error.stack : undefined;
      const frames = stack?.indexOf('\n    at ') ?? -1;
      const line = `${failure.handler} failed on ${event.eventType} event ${event.eventId} (account ${event.account}): ` + (summary ?? errorMessage(error));
      const trace = summary === undefined ? stack : summary + (frames === -1 ? '' : stack!.slice(frames));
      // a replayed capture of the event repeats it: at most 10 a minute per handler and event at error
      this.failureLines.say(this.logger, `${failure.handler} ${event.account} ${event.eventId}`, line, trace);
    }
    throw new PaymentEventHandlerError(event.eventId, event.eventType, failures);
  }

  /** Said once: durable handler providers then get an instance per event, not per tenant. */
  private warnStrategyFailed(error: unknown): void {
    if (this.strategyFailureWarned) return;
    this.strategyFailureWarned = true;
    this.logger.warn(
      `The app's ContextIdFactory strategy threw for a payment event (${errorMessage(error)}): its attach(contextId, request) gets the ` +
        'event as request (event.account, not HTTP headers). Request-scoped handlers run with a context of their own per event; ' +
        'durable ones get a new instance per event until attach() handles events. Said once.',
    );
  }

  /** Acknowledged either way (the service only needs a 2xx), but a missing handler should be noticed. */
  private warnUnhandled(event: AnyPaymentEvent): void {
    if (this.warnedUnhandled.has(event.eventType) || this.warnedUnhandled.size >= MAX_WARNED_TYPES) return;
    this.warnedUnhandled.add(event.eventType);
    this.logger.warn(
      `No @OnPaymentEvent handler or EventEmitter2 listener for ${event.eventType} events (account ${event.account}); ` +
        'they are acknowledged and dropped. Logged once per event type.',
    );
  }

  /** Attaches `canonicalStatus` from the payment status call: order state comes from it, not from event order. */
  private async reconcile(event: AnyPaymentEvent): Promise<void> {
    // a type the package does not know (a new one) may carry no trxId: it reaches '*' handlers as is
    if (paymentEventFamilyOf(event.eventType) !== 'payment' || !isKnownPaymentEventType(event.eventType)) return;
    const data = recordOf(event.data);
    // read as the client reads ids (a whole number is the id as text): a format detail must not lose the event
    const trxId = readResponseField(data, ['trxId']);
    if (trxId === undefined) {
      // Handlers rely on the canonical status when reconcile is on: never run them without it.
      throw new PaymentEventReconciliationError(event.eventId, event.eventType, String(data.trxId ?? ''), {
        cause: new TypeError('the payment event has no data.trxId'),
      });
    }
    if (!this.client) {
      throw new PaymentEventReconciliationError(event.eventId, event.eventType, trxId, {
        cause: new Error('reconcile is on but no PaymentGatewayService is provided'),
      });
    }
    let status: unknown;
    try {
      const payment = await this.client.getPaymentStatus(trxId);
      status = payment?.status;
    } catch (error) {
      throw new PaymentEventReconciliationError(event.eventId, event.eventType, trxId, { cause: error });
    }
    if (typeof status !== 'string' || status === '') {
      throw new PaymentEventReconciliationError(event.eventId, event.eventType, trxId, {
        cause: new TypeError('the status response has no data.status'),
      });
    }
    event.canonicalStatus = status;
  }
}

/**
 * Calls every listener of `name` as EventEmitter2's `emitAsync` does (`onAny` listeners first,
 * with the name; then those of the name, wildcard matches included; `this` the emitter, whose
 * `event` is the name), but waits for each to end and rejects only then: `emitAsync` settles on
 * the first rejection (a synchronous throw skips the listeners after it), so a delivery would be
 * answered, and its redelivery run, while other listeners of the first one still ran.
 * Rejects with the failure, or an `AggregateError` of all of them when several listeners failed.
 */
async function emitToEach(emitter: EventEmitter2, name: string, event: unknown): Promise<void> {
  const self = emitter as EventEmitter2 & { event?: unknown };
  // copies: a `once` listener removes itself from the emitter's own list when called
  const anyListeners = [...emitter.listenersAny()];
  const listeners = [...emitter.listeners(name)];
  const runs: Promise<unknown>[] = [];
  for (const listener of anyListeners) {
    runs.push(asPromise(() => ((self.event = name), listener.call(emitter, name, event))));
  }
  for (const listener of listeners) {
    runs.push(asPromise(() => ((self.event = name), listener.call(emitter, event))));
  }
  const failures: unknown[] = [];
  for (const result of await Promise.allSettled(runs)) if (result.status === 'rejected') failures.push(result.reason);
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} EventEmitter2 listeners of ${name} failed`);
}

/** EventEmitter2's own check, plus `onAny` listeners (which its wildcard mode leaves out). */
function hasListeners(emitter: EventEmitter2, name: string): boolean {
  return Boolean(emitter.hasListeners(name)) || emitter.listenersAny().length > 0;
}

/**
 * `emitter` when it works as an EventEmitter2: a test's `useMocker()` hands an optional dependency
 * its mock, whose `listeners()` answers nothing (every delivery would fail on it).
 */
function workingEmitter(emitter: EventEmitter2 | undefined): EventEmitter2 | undefined {
  try {
    return emitter !== undefined && Array.isArray(emitter.listeners(PAYMENT_EVENT_NAMESPACE)) ? emitter : undefined;
  } catch {
    return undefined;
  }
}
