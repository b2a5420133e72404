import {
  Controller,
  HttpCode,
  Inject,
  Injectable,
  Logger,
  type OnModuleInit,
  type Provider,
  Req,
  RequestMethod,
  type Type,
  UseFilters,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { HttpAdapterHost } from '@nestjs/core';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { PaymentEventReconciliationError } from '../events/payment-event.errors.js';
import { PaymentEventDispatcher } from '../events/payment-event.dispatcher.js';
import { PAYMENT_RESOLVED_OPTIONS } from '../payment.constants.js';
import { installWebhookBodyErrorHandler } from './payment-webhook-body-errors.js';
import { PaymentWebhookEnvelopeGuard } from './payment-webhook-envelope.guard.js';
import { PaymentWebhookExceptionFilter } from './payment-webhook-exception.filter.js';
import { PaymentWebhookHttpException } from './payment-webhook-http.exception.js';
import {
  PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS,
  PaymentWebhookIdempotencyInterceptor,
  type WebhookIdempotencyOptions,
} from './payment-webhook-idempotency.interceptor.js';
import { WebhookHandlerFailedError, WebhookReconciliationFailedError } from './payment-webhook.errors.js';
import { PaymentWebhookSignatureGuard } from './payment-webhook.guard.js';
import { getVerifiedPaymentWebhookEvent, type PaymentWebhookRequest } from './payment-webhook.request.js';

/** Body of a handled (or already handled) delivery. */
export interface PaymentWebhookAck {
  received: true;
  duplicate?: true;
}

/** Where (and whether) the webhook route was registered for one module instance. */
export interface PaymentWebhookRoute {
  enabled: boolean;
  /** Path without leading slash, relative to any global prefix; `undefined` when disabled. */
  path?: string;
}

/**
 * The webhook controller and its providers for ONE module instance. Each call makes a new
 * controller class, so route metadata set for one `forRoot()` never leaks into another.
 *
 * The route is decided at DI time: the options (env included) are only known when the
 * `PAYMENT_RESOLVED_OPTIONS` factory ran, and provider factories run before Nest's router
 * reads controller metadata. So the POST handler is declared without route metadata, and
 * a provider adds PATH/METHOD to it only when a webhook secret is configured; without one
 * the controller has no route at all (404).
 */
export function createPaymentWebhookParts(): { controller: Type<unknown>; providers: Provider[] } {
  const routeToken = Symbol('PAYMENT_WEBHOOK_ROUTE');

  @Controller()
  @UseFilters(PaymentWebhookExceptionFilter)
  @UseGuards(PaymentWebhookSignatureGuard, PaymentWebhookEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  class PaymentWebhookController {
    private readonly logger = new Logger('PaymentWebhooks');

    constructor(@Inject(PaymentEventDispatcher) private readonly dispatcher: PaymentEventDispatcher) {}

    @HttpCode(200)
    async receive(@Req() request: PaymentWebhookRequest): Promise<PaymentWebhookAck> {
      const event = getVerifiedPaymentWebhookEvent(request);
      if (!event) {
        // Only reachable if a guard was removed by a subclass or an override.
        throw new Error('Webhook handler reached without a verified event');
      }
      event.receivedAt = new Date();
      try {
        await this.dispatcher.dispatch(event);
      } catch (error) {
        if (error instanceof PaymentEventReconciliationError) {
          this.logger.warn(`${error.message}; answering 503 so the service retries`);
          throw new PaymentWebhookHttpException(new WebhookReconciliationFailedError({ cause: error }));
        }
        this.logger.error(
          `Handling ${event.eventType} event ${event.eventId} failed; answering 500 so the service retries: ` +
            (error instanceof Error ? error.message : String(error)),
          error instanceof Error ? error.stack : undefined,
        );
        throw new PaymentWebhookHttpException(new WebhookHandlerFailedError({ cause: error }));
      }
      return { received: true };
    }
  }

  const routeProvider: Provider = {
    provide: routeToken,
    inject: [PAYMENT_RESOLVED_OPTIONS],
    useFactory: (options: ResolvedPaymentOptions): PaymentWebhookRoute => {
      const handler = PaymentWebhookController.prototype.receive;
      if (options.webhookSecrets.length === 0) {
        return { enabled: false };
      }
      const path = options.webhookPath; // already without leading/trailing slashes (resolvePaymentOptions)
      Reflect.defineMetadata(PATH_METADATA, path, handler);
      Reflect.defineMetadata(METHOD_METADATA, RequestMethod.POST, handler);
      return { enabled: true, path };
    },
  };

  @Injectable()
  class PaymentWebhookBodyErrorsInstaller implements OnModuleInit {
    constructor(
      @Inject(routeToken) private readonly route: PaymentWebhookRoute,
      private readonly adapterHost: HttpAdapterHost,
    ) {}

    onModuleInit(): void {
      const adapter = this.adapterHost.httpAdapter;
      if (this.route.enabled && this.route.path !== undefined && adapter) {
        installWebhookBodyErrorHandler(adapter, this.route.path);
      }
    }
  }

  const idempotencyOptionsProvider: Provider = {
    provide: PAYMENT_WEBHOOK_IDEMPOTENCY_OPTIONS,
    inject: [PAYMENT_RESOLVED_OPTIONS],
    useFactory: (options: ResolvedPaymentOptions): WebhookIdempotencyOptions => ({
      leaseMs: options.webhookLeaseMs,
      retentionMs: options.webhookRetentionMs,
    }),
  };

  return {
    controller: PaymentWebhookController,
    providers: [
      routeProvider,
      idempotencyOptionsProvider,
      PaymentWebhookBodyErrorsInstaller,
      PaymentWebhookSignatureGuard,
      PaymentWebhookEnvelopeGuard,
      PaymentWebhookIdempotencyInterceptor,
      PaymentWebhookExceptionFilter,
    ],
  };
}
