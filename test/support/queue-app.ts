// Helpers of the queue-mode suite (test/queue): a real app with PaymentModule.forRoot() in
// queue mode (optionally a second, named account and the host's EventEmitterModule), a
// handler whose behaviour each test sets per eventId, and a listener of dead-letter events.
import 'reflect-metadata';
import { Injectable, type INestApplication, type LoggerService, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { PaymentModuleOptions } from '../../lib/config/payment-module-options.interface.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { PAYMENT_DEAD_LETTER_EVENT } from '../../lib/payment.constants.js';
import type { PaymentDeadLetter } from '../../lib/queue/payment-dead-letter.interface.js';
import { PaymentDeadLetterService } from '../../lib/queue/payment-dead-letter.service.js';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { webhookEventKey } from '../../lib/webhooks/webhook-store-keys.js';
import { WEBHOOK_SECRET } from './webhooks-app.js';

/** Settings that keep the suite fast: retries after 50 ms, 100 ms; a dead worker's job is taken over within about 2 s. */
export const FAST_QUEUE_OPTIONS: PaymentModuleOptions = {
  processing: 'queue',
  queueAttempts: 3,
  queueBackoffMs: 50,
  queueLockDurationMs: 1000,
  webhookLeaseMs: 1000,
  queueShutdownTimeoutMs: 1000,
};

/**
 * Runs for every event. Per eventId a test may make it slow, fail a number of times, fail
 * until told otherwise, or wait forever; `entered`/`done` count starts and successful runs.
 */
@Injectable()
export class QueueHandlers {
  readonly entered = new Map<string, number>();
  readonly done = new Map<string, number>();
  readonly accounts = new Map<string, string>();
  readonly slowMs = new Map<string, number>();
  readonly failTimes = new Map<string, number>();
  readonly failing = new Set<string>();
  readonly hang = new Set<string>();
  /** Handlers of these events wait until the test releases them (see `hold`). */
  private readonly gates = new Map<string, Promise<void>>();

  /** Makes the handler of `eventId` wait, once entered, until the returned function is called. */
  hold(eventId: string): () => void {
    let release!: () => void;
    this.gates.set(eventId, new Promise<void>((resolve) => (release = resolve)));
    return () => release();
  }

  @OnPaymentEvent('*')
  async handle(event: AnyPaymentEvent): Promise<void> {
    const id = event.eventId;
    this.entered.set(id, (this.entered.get(id) ?? 0) + 1);
    this.accounts.set(id, event.account);
    if (this.hang.has(id)) await new Promise(() => undefined);
    await this.gates.get(id);
    const slow = this.slowMs.get(id);
    if (slow) await new Promise((resolve) => setTimeout(resolve, slow));
    const failLeft = this.failTimes.get(id) ?? 0;
    if (failLeft > 0) {
      this.failTimes.set(id, failLeft - 1);
      throw new Error(`flaky downstream (${failLeft} more failure(s) planned)`);
    }
    if (this.failing.has(id)) throw new Error('downstream always failing');
    this.done.set(id, (this.done.get(id) ?? 0) + 1);
  }

  count(map: 'entered' | 'done', id: string): number {
    return this[map].get(id) ?? 0;
  }
}

/** Dead letters, and payment.succeeded events re-emitted by the worker, heard on the host's EventEmitter2. */
@Injectable()
export class DeadLetterListener {
  readonly received: PaymentDeadLetter[] = [];
  readonly succeeded: AnyPaymentEvent[] = [];

  @OnEvent(PAYMENT_DEAD_LETTER_EVENT)
  onDeadLetter(deadLetter: PaymentDeadLetter): void {
    this.received.push(deadLetter);
  }

  @OnEvent('payment-gateway.payment.succeeded')
  onSucceeded(event: AnyPaymentEvent): void {
    this.succeeded.push(event);
  }
}

export interface QueueAppOptions {
  payment?: PaymentModuleOptions;
  /** A second account of this name, with the same options and its own webhook path. */
  namedAccount?: string;
  /** Options of the named account that differ from `payment` (e.g. `processing: 'inline'`). */
  namedPayment?: PaymentModuleOptions;
  /** Nest's `forceCloseConnections` (as the README advises): a request whose inline handler hangs does not hold close(). */
  forceCloseConnections?: boolean;
  /** Import the host's EventEmitterModule (dead-letter events); `'not global'`: with `global: false`. @default false */
  eventEmitter?: boolean | 'not global';
  logger?: LoggerService | false;
}

export interface QueueApp {
  app: INestApplication;
  url: string;
  handlers: QueueHandlers;
  deadLetters: PaymentDeadLetterService;
  listener?: DeadLetterListener;
  close(): Promise<void>;
}

export async function startQueueApp(redisUrl: string, opts: QueueAppOptions = {}): Promise<QueueApp> {
  const payment: PaymentModuleOptions = {
    baseUrl: 'http://127.0.0.1:9',
    webhookSecret: WEBHOOK_SECRET,
    queueRedisUrl: redisUrl,
    ...FAST_QUEUE_OPTIONS,
    ...opts.payment,
  };
  @Module({
    imports: [
      ...(opts.eventEmitter ? [EventEmitterModule.forRoot({ global: opts.eventEmitter !== 'not global' })] : []),
      PaymentModule.forRoot(payment),
      ...(opts.namedAccount ? [PaymentModule.forRoot({ ...payment, ...opts.namedPayment, account: opts.namedAccount })] : []),
    ],
    providers: [QueueHandlers, ...(opts.eventEmitter ? [DeadLetterListener] : [])],
  })
  class QueueAppModule {}

  const app = await NestFactory.create(QueueAppModule, new ExpressAdapter(), {
    rawBody: true,
    logger: opts.logger ?? false,
    forceCloseConnections: opts.forceCloseConnections ?? false,
  });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
  return {
    app,
    url,
    handlers: app.get(QueueHandlers),
    deadLetters: app.get(PaymentDeadLetterService),
    listener: opts.eventEmitter ? app.get(DeadLetterListener) : undefined,
    close: () => app.close(),
  };
}

/** Marks `eventId` processed in the default account's event store of `app`, as a handled event is, for `retentionMs`. */
export async function markProcessed(app: INestApplication, eventId: string, retentionMs = 60_000): Promise<void> {
  const store = app.get(PaymentAccountRegistry).require('default').store!;
  const key = webhookEventKey('default', eventId);
  const claim = await store.claim(key, 60_000);
  if (claim.outcome !== 'claimed') throw new Error(`claiming ${eventId}: ${claim.outcome}`);
  await store.complete(key, claim.claimToken, retentionMs);
}

export { sleep, waitFor } from './wait.js';
