// Helpers of the reliability suite (test/reliability): a real app with PaymentModule.forRoot()
// and a counting handler, signed webhook requests, a bounded request pool, a seeded PRNG.
import 'reflect-metadata';
import { Injectable, type INestApplication, type LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { buildPaymentEvent } from '../../lib/testing/event-builders.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import { webhookMount, type WebhookMount } from './webhooks-app.js';

export type ReliabilityAdapter = 'express' | 'fastify';
export const RELIABILITY_WEBHOOK_SECRET = 'whsec_reliability_primary_7f3a';
export const WEBHOOK_ROUTE = '/payments/webhook';

/**
 * Counts completed handler runs per eventId (the "effect"). The first attempt throws (a
 * flaky downstream) for eventIds in `failFirst` and for events whose `data.custom` starts
 * with `flaky:`; `attempts` counts every start.
 */
@Injectable()
export class EffectCounter {
  readonly done = new Map<string, number>();
  readonly attempts = new Map<string, number>();
  readonly failFirst = new Set<string>();
  /** Every eventId whose handler threw, in order. */
  readonly failures: string[] = [];

  @OnPaymentEvent('*')
  async onAny(event: AnyPaymentEvent): Promise<void> {
    const attempt = (this.attempts.get(event.eventId) ?? 0) + 1;
    this.attempts.set(event.eventId, attempt);
    // yield once so concurrent copies really overlap inside the route
    await new Promise((resolve) => setImmediate(resolve));
    const custom = (event.data as { custom?: unknown } | undefined)?.custom;
    const flaky = this.failFirst.has(event.eventId) || (typeof custom === 'string' && custom.startsWith('flaky:'));
    if (attempt === 1 && flaky) {
      this.failures.push(event.eventId);
      throw new Error(`flaky downstream failed for ${event.eventId}`);
    }
    this.done.set(event.eventId, (this.done.get(event.eventId) ?? 0) + 1);
  }

  get totalRuns(): number {
    let n = 0;
    for (const v of this.done.values()) n += v;
    return n;
  }
}

export interface ReliabilityApp {
  app: INestApplication;
  url: string;
  webhookUrl: string;
  effects: EffectCounter;
  close(): Promise<void>;
}

export async function startReliabilityApp(
  adapter: ReliabilityAdapter,
  payment: PaymentModuleOptions = {},
  logger: LoggerService | false = false,
  mount: WebhookMount = 'module route',
): Promise<ReliabilityApp> {
  const mounted = webhookMount(mount);
  @Module({
    imports: [
      PaymentModule.forRoot({
        baseUrl: 'http://127.0.0.1:9',
        webhookSecret: RELIABILITY_WEBHOOK_SECRET,
        ...mounted.payment,
        ...payment,
      }),
    ],
    // the host's own controller with PaymentWebhookReceiver, at the same path
    controllers: mounted.controllers,
    providers: [EffectCounter],
  })
  class ReliabilityAppModule {}

  const app = await NestFactory.create(ReliabilityAppModule, adapter === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
    rawBody: true,
    logger,
  });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  return { app, url, webhookUrl: url + WEBHOOK_ROUTE, effects: app.get(EffectCounter), close: () => app.close() };
}

let sequence = 0;

/** A valid spec 2.1 envelope of `payment.succeeded` (the simulator's builder) with a unique eventId. */
export function paymentSucceeded(tag = 'rel', custom?: string): Record<string, unknown> & { eventId: string } {
  sequence++;
  const id = `${tag}_${process.pid}_${sequence}`;
  return {
    ...buildPaymentEvent(
      'payment.succeeded',
      { trxId: `trx_${id}`, token: `tok_${id}`, amount: '12.50000000', custom: custom ?? `order-${id}` },
      { eventId: `evt_${id}` },
    ),
  };
}

export interface SignedResponse {
  status: number;
  json: any;
}

/** POSTs `body` signed with `secret` (the service's way), to the app's webhook route. */
export async function postSigned(
  webhookUrl: string,
  body: unknown,
  secret = RELIABILITY_WEBHOOK_SECRET,
): Promise<SignedResponse> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(webhookUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': createWebhookSignatureHeader(raw, secret) },
    body: raw,
  });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json };
}

/** Runs `work` over `items` with at most `concurrency` in flight; results in item order. */
export async function runPool<T, R>(items: readonly T[], concurrency: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}

/** Deterministic PRNG (mulberry32): the same seed gives the same run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export { sleep, waitFor as waitUntil } from './wait.js';
