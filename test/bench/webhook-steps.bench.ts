// Benchmark 7: where a delivery's CPU goes inside the module (no HTTP), step by step, in one
// process, rounds interleaved; the medians say what each step of benchmark 1's module route
// costs beyond the floor route's HMAC + JSON.parse.
import 'reflect-metadata';
import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { parseWebhookEnvelope } from '../../lib/webhooks/payment-webhook-envelope.js';
import type { PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { PaymentWebhookVerifier } from '../../lib/webhooks/payment-webhook.verifier.js';
import { WebhookDeduplicator } from '../../lib/webhooks/webhook-deduplicator.js';
import { createWebhookSignatureHeader, verifyWebhookSignature } from '../../lib/webhooks/webhook-signature.js';
import { BENCH_WEBHOOK_SECRET, type BenchRow, fmt, median } from './bench-util.js';

@Injectable()
class NoopHandler {
  @OnPaymentEvent('payment.succeeded')
  onSucceeded(): void {}
}

@Module({
  imports: [PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', webhookSecret: BENCH_WEBHOOK_SECRET, webhookRoute: false })],
  providers: [NoopHandler],
})
class StepsModule {}

function requests(tag: string, count: number): PaymentWebhookRequest[] {
  const out: PaymentWebhookRequest[] = [];
  for (let i = 0; i < count; i++) {
    const raw = Buffer.from(
      JSON.stringify({
        eventId: `evt_step_${tag}_${i}`,
        eventType: 'payment.succeeded',
        apiVersion: '2024-01-15',
        createdAt: new Date().toISOString(),
        environment: 'sandbox',
        data: { trxId: `trx_${i}`, token: 't', amount: '10.00000000', currency: 'USD', status: 'SUCCESS', custom: `order-${i}`, merchantId: 1 },
      }),
    );
    out.push({
      headers: {
        'content-type': 'application/json',
        'content-length': String(raw.length),
        'x-service-signature': createWebhookSignatureHeader(raw, BENCH_WEBHOOK_SECRET),
      },
      rawBody: raw,
    });
  }
  return out;
}

export async function webhookSteps(settings: { deliveries: number; rounds: number }): Promise<BenchRow[]> {
  const app = await NestFactory.createApplicationContext(StepsModule, { logger: false });
  await app.init();
  try {
    const account = app.get(PaymentAccountRegistry).require('default');
    const logger = new Logger('bench');
    const verifier = new PaymentWebhookVerifier(
      { account: 'default', webhookSecrets: [BENCH_WEBHOOK_SECRET], webhookToleranceSeconds: 300, webhookMaxBodyBytes: 1024 * 1024 },
      logger,
    );
    const deduplicator = new WebhookDeduplicator(new MemoryWebhookEventStore(), logger);
    const dedupe = { leaseMs: 60_000, retentionMs: 7 * 24 * 3600 * 1000, completeAttempts: 3, maxLeaseRenewalMs: 900_000 };
    const noop = async (): Promise<void> => undefined;
    const steps: Array<[string, (request: PaymentWebhookRequest, i: number) => unknown]> = [
      ['signature check (header parse + HMAC-SHA256 + compare)', (r) => verifyWebhookSignature(r.rawBody!, r.headers['x-service-signature'], [BENCH_WEBHOOK_SECRET])],
      ['envelope (UTF-8 check + JSON.parse + field checks)', (r) => parseWebhookEnvelope(r.rawBody!, () => undefined)],
      ['verifier (content type, size, signature, envelope)', (r) => verifier.verify(r)],
      ['deduplication (memory claim, renewal tracking, completion)', (_r, i) => deduplicator.run(`default:event:step_${i}`, dedupe, noop)],
      ['dispatch (handler lookup, one no-op handler)', (r) => account.dispatcher!.dispatch(JSON.parse(r.rawBody!.toString('utf8')))],
      ['whole delivery (PaymentWebhookProcessor.process)', (r) => account.webhooks!.process(r)],
    ];
    const cpu: number[][] = steps.map(() => []);
    for (let round = 0; round < settings.rounds; round++) {
      for (let s = 0; s < steps.length; s++) {
        const [, step] = steps[s]!;
        const batch = requests(`${round}_${s}`, settings.deliveries);
        const started = process.cpuUsage();
        for (let i = 0; i < batch.length; i++) {
          const result = step(batch[i]!, round * settings.deliveries + i);
          if (result instanceof Promise) await result;
        }
        cpu[s]!.push(process.cpuUsage(started).user / batch.length);
      }
    }
    return steps.map(([name], s) => ({
      benchmark: `7. step: ${name}`,
      measured: `user CPU per delivery, median of ${settings.rounds} rounds of ${fmt(settings.deliveries)}`,
      figure: `${median(cpu[s]!).toFixed(1)} µs`,
      target: 'reported',
      pass: true,
    }));
  } finally {
    await app.close();
  }
}
