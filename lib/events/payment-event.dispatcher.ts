import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { ContextIdFactory, ModuleRef } from '@nestjs/core';
import { STATIC_CONTEXT } from '@nestjs/core/injector/constants.js';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PaymentGatewayService } from '../client/payment-gateway.service.js';
import { PAYMENT_EVENT_NAMESPACE, PAYMENT_RESOLVED_OPTIONS } from '../payment.constants.js';
import {
  PaymentEventHandlerError,
  PaymentEventReconciliationError,
  type PaymentEventHandlerFailure,
} from './payment-event.errors.js';
import { PaymentEventExplorer } from './payment-event.explorer.js';
import { paymentEventFamilyOf, type AnyPaymentEvent } from './payment-event.types.js';

/** Name under which an event type is emitted on EventEmitter2: `payment-gateway.payment.succeeded`. */
export function paymentEventEmitterName(eventType: string): string {
  return `${PAYMENT_EVENT_NAMESPACE}.${eventType}`;
}

/**
 * Delivers one verified, deduplicated event to every matching `@OnPaymentEvent`
 * handler and to host `@OnEvent('payment-gateway.<type>')` listeners, and
 * resolves only when all of them succeeded.
 */
@Injectable()
export class PaymentEventDispatcher {
  private readonly logger = new Logger('PaymentEvents');

  constructor(
    private readonly explorer: PaymentEventExplorer,
    private readonly moduleRef: ModuleRef,
    @Optional() private readonly eventEmitter?: EventEmitter2,
    @Optional() @Inject(PAYMENT_RESOLVED_OPTIONS) private readonly options?: ResolvedPaymentOptions,
    // Injected, not looked up app-wide: with two PaymentModule instances each reconciles with its own credentials.
    @Optional() private readonly client?: PaymentGatewayService,
  ) {}

  /**
   * Runs every handler matching `event.eventType` (exact, `'<family>.*'`, `'*'`;
   * an unknown type reaches `'*'` only) concurrently and waits for all of them.
   *
   * @throws PaymentEventReconciliationError when `reconcile` is on and the
   *   payment status could not be read (no handler ran).
   * @throws PaymentEventHandlerError when any handler or host listener failed
   *   (the others still ran). Either way the delivery must not be answered 2xx.
   */
  async dispatch(event: AnyPaymentEvent): Promise<void> {
    event.receivedAt ??= new Date();
    if (this.options?.reconcile) {
      await this.reconcile(event);
    }
    const handlers = this.explorer.registry.match(event.eventType);
    if (handlers.length === 0) {
      this.logger.debug(`No @OnPaymentEvent handler for ${event.eventType} event ${event.eventId}`);
    }
    let scoped = false;
    for (const handler of handlers) scoped ||= handler.scoped !== false;
    // A context id (with the event registered as REQUEST) only matters to handlers resolved
    // per event; static ones ignore it, so the DI registration is skipped when all are static.
    const context = { contextId: scoped ? ContextIdFactory.create() : STATIC_CONTEXT };
    if (scoped) {
      // Request-scoped handler providers that inject REQUEST receive the event.
      this.moduleRef.registerRequestByContextId(event, context.contextId);
    }

    const names: string[] = [];
    const runs: Promise<unknown>[] = [];
    for (const handler of handlers) {
      names.push(handler.name);
      runs.push(handler.invoke(event, context));
    }
    if (this.eventEmitter) {
      const emitterName = paymentEventEmitterName(event.eventType);
      names.push(`EventEmitter2:${emitterName}`);
      // emitAsync resolves with the listeners' results, so a listener with
      // `suppressErrors: false` that rejects fails the delivery too.
      runs.push(Promise.resolve().then(() => this.eventEmitter!.emitAsync(emitterName, event)));
    }

    const results = await Promise.allSettled(runs);
    const failures: PaymentEventHandlerFailure[] = [];
    results.forEach((result, index) => {
      if (result.status === 'rejected') failures.push({ handler: names[index]!, error: result.reason });
    });
    if (failures.length === 0) return;

    for (const failure of failures) {
      const error = failure.error;
      this.logger.error(
        `${failure.handler} failed on ${event.eventType} event ${event.eventId}: ${error instanceof Error ? error.message : String(error)}`,
        error instanceof Error ? error.stack : undefined,
      );
    }
    throw new PaymentEventHandlerError(event.eventId, event.eventType, failures);
  }

  /** Attaches `canonicalStatus` from `GET /payment/status` to a payment event (spec 6.2: state comes from the status call, not event order). */
  private async reconcile(event: AnyPaymentEvent): Promise<void> {
    if (paymentEventFamilyOf(event.eventType) !== 'payment') return;
    const trxId = (event.data as { trxId?: unknown } | undefined)?.trxId;
    if (typeof trxId !== 'string' || trxId === '') {
      // Handlers rely on the canonical status when reconcile is on: never run them without it.
      throw new PaymentEventReconciliationError(event.eventId, event.eventType, String(trxId ?? ''), {
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
