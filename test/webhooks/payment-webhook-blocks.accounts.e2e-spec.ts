import 'reflect-metadata';
import { Controller, type ExecutionContext, HttpCode, Inject, Injectable, Post, Req, UseGuards, UseInterceptors } from '@nestjs/common';
import { getPaymentGatewayToken, getPaymentOptionsToken } from '../../lib/accounts/payment-account.tokens.js';
import type { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import type { ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { PaymentWebhookEnvelopeGuard } from '../../lib/webhooks/payment-webhook-envelope.guard.js';
import { PaymentWebhookIdempotencyInterceptor } from '../../lib/webhooks/payment-webhook-idempotency.interceptor.js';
import { PaymentWebhookSignatureGuard } from '../../lib/webhooks/payment-webhook-signature.guard.js';
import { PaymentWebhookReceiver } from '../../lib/webhooks/payment-webhook.receiver.js';
import { getVerifiedPaymentWebhookEvent, type PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { ADAPTERS, envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// The building blocks (signature guard, envelope guard, idempotency interceptor) on host routes
// of a named account: the same store as the account's own receiver, and no account nobody registered.
const EU_SECRET = 'whsec_blocks_eu';
const runs: string[] = [];

@Injectable()
class EuSignatureGuard extends PaymentWebhookSignatureGuard {
  constructor(@Inject(getPaymentOptionsToken('eu')) options: ResolvedPaymentOptions) {
    super(options);
  }
}

/** Account 'uk' has neither a webhook secret nor client credentials. */
@Injectable()
class UkSignatureGuard extends PaymentWebhookSignatureGuard {
  constructor(@Inject(getPaymentOptionsToken('uk')) options: ResolvedPaymentOptions) {
    super(options);
  }
}

@Injectable()
class EuEnvelopeGuard extends PaymentWebhookEnvelopeGuard {
  protected override getAccount(_context: ExecutionContext): string {
    return 'eu';
  }
}

/** Names an account with a typo: no forRoot() registers 'EU'. */
@Injectable()
class MistypedEnvelopeGuard extends PaymentWebhookEnvelopeGuard {
  protected override getAccount(_context: ExecutionContext): string {
    return 'EU';
  }
}

@Controller('eu')
class EuWebhooksController {
  constructor(private readonly receiver: PaymentWebhookReceiver) {}

  @Post('blocks')
  @HttpCode(200)
  @UseGuards(EuSignatureGuard, EuEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  blocks(@Req() request: PaymentWebhookRequest) {
    runs.push(`blocks:${getVerifiedPaymentWebhookEvent(request)!.eventId}`);
    return { received: true };
  }

  @Post('receiver')
  @HttpCode(200)
  receive(@Req() request: PaymentWebhookRequest) {
    return this.receiver.receive(request, 'eu');
  }

  @Post('uk-receiver')
  @HttpCode(200)
  receiveUk(@Req() request: PaymentWebhookRequest) {
    return this.receiver.receive(request, 'uk');
  }

  @Post('uk-guard')
  @HttpCode(200)
  @UseGuards(UkSignatureGuard)
  guardUk() {
    return { received: true };
  }

  @Post('mistyped')
  @HttpCode(200)
  @UseGuards(EuSignatureGuard, MistypedEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  mistyped(@Req() request: PaymentWebhookRequest) {
    runs.push(`mistyped:${getVerifiedPaymentWebhookEvent(request)!.eventId}`);
    return { received: true };
  }
}

describe.each(ADAPTERS)('building blocks on the routes of a named account (%s)', (adapter) => {
  let app: WebhookApp;
  const logger = new CollectingLogger();
  beforeAll(async () => {
    app = await startWebhookApp({
      adapter,
      logger,
      payment: { webhookRoute: false },
      extraImports: [
        PaymentModule.forRoot({ account: 'eu', baseUrl: 'http://127.0.0.1:9', webhookSecret: EU_SECRET, webhookRoute: false }),
        PaymentModule.forRoot({ account: 'uk', baseUrl: 'http://127.0.0.1:9', webhookRoute: false }),
      ],
      controllers: [EuWebhooksController],
      extraProviders: [EuSignatureGuard, EuEnvelopeGuard, MistypedEnvelopeGuard, UkSignatureGuard],
    });
  });
  afterAll(() => app?.close());

  it("the interceptor claims a named account's event in that account's store: its receiver route then answers duplicate", async () => {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    expect(await postWebhook(app.url, event, { path: 'eu/blocks', secret: EU_SECRET })).toMatchObject({ status: 200, json: { received: true } });
    // was { received: true }, and the account's handlers ran a second time
    expect(await postWebhook(app.url, event, { path: 'eu/receiver', secret: EU_SECRET })).toMatchObject({
      status: 200,
      json: { received: true, duplicate: true },
    });
    expect(app.handlers.count('payment.*', id)).toBe(0);
    // and the other way round
    const second = envelope('payment.succeeded');
    expect((await postWebhook(app.url, second, { path: 'eu/receiver', secret: EU_SECRET })).json).toEqual({ received: true });
    expect((await postWebhook(app.url, second, { path: 'eu/blocks', secret: EU_SECRET })).json).toEqual({ received: true, duplicate: true });
    expect(runs.filter((run) => run === `blocks:${second.eventId}`)).toHaveLength(0);
  });

  it('an envelope guard naming an account no forRoot() registers is refused (500 WEBHOOK_ROUTE_MISCONFIGURED, logged with the names), never run', async () => {
    const event = envelope('payment.succeeded');
    const answer = await postWebhook(app.url, event, { path: 'eu/mistyped', secret: EU_SECRET });
    expect(answer.status).toBe(500);
    expect(answer.json).toMatchObject({ statusCode: 500, code: 'WEBHOOK_ROUTE_MISCONFIGURED' });
    expect(runs).not.toContain(`mistyped:${event.eventId}`);
    expect(logger.lines.some((line) => line.level === 'error' && line.message.includes("'EU'") && line.message.includes('eu'))).toBe(true);
  });

  it("an account without a webhook secret or credentials names its own variables (PAYMENT_UK_*), not the default account's", async () => {
    for (const path of ['eu/uk-receiver', 'eu/uk-guard']) {
      const answer = await postWebhook(app.url, envelope('payment.succeeded'), { path });
      expect(answer.status).toBe(500);
      expect(answer.json).toMatchObject({ code: 'WEBHOOK_SECRET_NOT_CONFIGURED', message: expect.stringContaining('set PAYMENT_UK_WEBHOOK_SECRET or') });
    }
    const error = await app.app.get<PaymentGatewayService>(getPaymentGatewayToken('uk')).listGateways().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIGURATION_ERROR', account: 'uk' });
    expect((error as Error).message).toContain('(PAYMENT_UK_CLIENT_ID / PAYMENT_UK_CLIENT_SECRET)');
  });
});
