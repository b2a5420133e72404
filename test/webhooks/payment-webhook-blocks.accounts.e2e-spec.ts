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
import { WebhookIdempotencyKey } from '../../lib/webhooks/webhook-idempotency-key.decorator.js';
import { Redis } from 'ioredis';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { ADAPTERS, envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// The building blocks (signature guard, envelope guard, idempotency interceptor) on host routes
// of a named account: the same store as the account's own receiver, and no account nobody registered.
const EU_SECRET = 'whsec_blocks_eu';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
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

/** A subclass with a field of its own named `accounts` (the guard's registry must not clash with it). */
@Injectable()
class TenantEnvelopeGuard extends PaymentWebhookEnvelopeGuard {
  private readonly accounts = new Map([['acme', 'eu']]);
  protected override getAccount(_context: ExecutionContext): string {
    return this.accounts.get('acme')!;
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

  @Post('tenant')
  @HttpCode(200)
  @UseGuards(EuSignatureGuard, TenantEnvelopeGuard)
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  tenant(@Req() request: PaymentWebhookRequest) {
    runs.push(`tenant:${getVerifiedPaymentWebhookEvent(request)!.eventId}`);
    return { received: true };
  }

  /** Keeps ids an hour: enough for the default account's replay window (10 minutes), not for eu's (2 hours). */
  @Post('short-retention')
  @HttpCode(200)
  @UseGuards(EuSignatureGuard, EuEnvelopeGuard)
  @WebhookIdempotencyKey((request: PaymentWebhookRequest) => getVerifiedPaymentWebhookEvent(request)?.eventId, { retentionMs: HOUR })
  @UseInterceptors(PaymentWebhookIdempotencyInterceptor)
  shortRetention(@Req() request: PaymentWebhookRequest) {
    runs.push(`short:${getVerifiedPaymentWebhookEvent(request)!.eventId}`);
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
  let redis: TestRedisServer;
  const logger = new CollectingLogger();
  beforeAll(async () => {
    redis = await startRedisServer();
    app = await startWebhookApp({
      adapter,
      logger,
      payment: { webhookRoute: false, webhookRetentionMs: HOUR },
      extraImports: [
        // eu keeps processed ids 2 days, the default account 1 hour: a host route claims eu's events for eu's 2 days
        // and accepts a signed delivery for an hour (its replay window: 2 hours)
        PaymentModule.forRoot({
          account: 'eu',
          baseUrl: 'http://127.0.0.1:9',
          webhookSecret: EU_SECRET,
          webhookRoute: false,
          redisUrl: redis.url,
          redisKeyPrefix: `blocks-${adapter}:`,
          webhookRetentionMs: 2 * DAY,
          webhookToleranceSeconds: 3600,
        }),
        PaymentModule.forRoot({ account: 'uk', baseUrl: 'http://127.0.0.1:9', webhookRoute: false }),
      ],
      controllers: [EuWebhooksController],
      extraProviders: [EuSignatureGuard, EuEnvelopeGuard, MistypedEnvelopeGuard, UkSignatureGuard, TenantEnvelopeGuard],
    });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

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

  it("the interceptor keeps a named account's event as long as that account does (its webhookRetentionMs, not the default account's)", async () => {
    const event = envelope('payment.succeeded');
    expect((await postWebhook(app.url, event, { path: 'eu/blocks', secret: EU_SECRET })).json).toEqual({ received: true });
    const probe = new Redis(redis.url);
    try {
      const ttl = await probe.pttl(`blocks-${adapter}:eu:event:${event.eventId}`);
      // was about an hour (the default account's retention)
      expect(ttl).toBeGreaterThan(DAY);
    } finally {
      probe.disconnect();
    }
  });

  it('a subclass with an `accounts` field of its own works: the guard keeps its registry to itself', async () => {
    const event = envelope('payment.succeeded');
    expect((await postWebhook(app.url, event, { path: 'eu/tenant', secret: EU_SECRET })).json).toEqual({ received: true });
    expect((await postWebhook(app.url, event, { path: 'eu/receiver', secret: EU_SECRET })).json).toEqual({ received: true, duplicate: true });
    expect(runs).toContain(`tenant:${event.eventId}`);
  });

  it('an envelope guard naming an account no forRoot() registers is refused (500 WEBHOOK_ROUTE_MISCONFIGURED, logged with the names), never run', async () => {
    const event = envelope('payment.succeeded');
    const answer = await postWebhook(app.url, event, { path: 'eu/mistyped', secret: EU_SECRET });
    expect(answer.status).toBe(500);
    expect(answer.json).toMatchObject({ statusCode: 500, code: 'WEBHOOK_ROUTE_MISCONFIGURED' });
    expect(runs).not.toContain(`mistyped:${event.eventId}`);
    expect(logger.lines.some((line) => line.level === 'error' && line.message.includes("'EU'") && line.message.includes('eu'))).toBe(true);
  });

  it("a route's own retentionMs shorter than a named account's replay window is refused for its events (500 WEBHOOK_ROUTE_MISCONFIGURED), never run", async () => {
    const event = envelope('payment.succeeded');
    const answer = await postWebhook(app.url, event, { path: 'eu/short-retention', secret: EU_SECRET });
    // was 200, and a copy of the same signed bytes an hour later (within eu's tolerance) ran it again
    expect(answer.status).toBe(500);
    expect(answer.json).toMatchObject({ code: 'WEBHOOK_ROUTE_MISCONFIGURED' });
    expect(runs).not.toContain(`short:${event.eventId}`);
    const line = logger.lines.find((l) => l.level === 'error' && l.message.startsWith('EuWebhooksController.shortRetention:'));
    expect(line?.message).toContain(`the idempotency retentionMs (${HOUR}) must be at least twice webhookToleranceSeconds of account eu (${2 * HOUR} ms)`);
  });

  it("an account without a webhook secret or credentials names its own variables (PAYMENT_UK_*), not the default account's", async () => {
    for (const path of ['eu/uk-receiver', 'eu/uk-guard']) {
      const answer = await postWebhook(app.url, envelope('payment.succeeded'), { path });
      expect(answer.status).toBe(500);
      expect(answer.json).toMatchObject({ code: 'WEBHOOK_SECRET_NOT_CONFIGURED', message: expect.stringContaining('set PAYMENT_UK_WEBHOOK_SECRET or') });
    }
    // our side's fault, answered 500 to every delivery: the guard route says it at error, once
    await postWebhook(app.url, envelope('payment.succeeded'), { path: 'eu/uk-guard' });
    const guardLines = logger.lines.filter((line) => line.message.startsWith('EuWebhooksController.guardUk: No webhook secret'));
    expect(guardLines.map((line) => [line.level, line.message])).toEqual([
      ['error', 'EuWebhooksController.guardUk: No webhook secret is configured (set PAYMENT_UK_WEBHOOK_SECRET or the webhookSecret option)'],
    ]);
    const error = await app.app.get<PaymentGatewayService>(getPaymentGatewayToken('uk')).listGateways().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CONFIGURATION_ERROR', account: 'uk' });
    expect((error as Error).message).toContain('(PAYMENT_UK_CLIENT_ID / PAYMENT_UK_CLIENT_SECRET)');
  });
});
