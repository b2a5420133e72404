import 'reflect-metadata';
import { inspect } from 'node:util';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import { readPaymentEnv } from '../../lib/config/payment-env.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { loadBullMq } from '../../lib/queue/bullmq.loader.js';
import { PaymentDeadLetterService } from '../../lib/queue/payment-dead-letter.service.js';
import { paymentEventJobId } from '../../lib/queue/payment-event-job.js';
import { BullMqMissingError } from '../../lib/queue/payment-queue.errors.js';
import { fastestDeadLetterMs } from '../../lib/queue/payment-queue.settings.js';
import { paymentEventJobOptions, paymentQueueLayout, paymentWorkerOptions } from '../../lib/queue/payment-queue.settings.js';

const BASE = { baseUrl: 'http://127.0.0.1:9' };

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof PaymentConfigurationError) return error.problems;
    throw error;
  }
  throw new Error('expected a PaymentConfigurationError');
}

describe('queue-mode options', () => {
  it('defaults to inline processing; queue settings retry within seconds to minutes', () => {
    const options = resolvePaymentOptions(BASE);
    expect(options).toMatchObject({
      processing: 'inline',
      queueWorker: true,
      queueConcurrency: 10,
      queueAttempts: 10,
      queueBackoffMs: 1000,
      queueDeadLetterRetentionMs: 30 * 24 * 3600 * 1000,
      queueShutdownTimeoutMs: 10_000,
      queueJobTimeoutMs: 15 * 60 * 1000,
      queueLockDurationMs: 30_000,
      queueMaxStalledCount: 2,
      redisTimeoutMs: 2000,
    });
    expect(options.queueRedisUrl).toBeUndefined();
    // 9 retries doubling from 1 s: the last one about 8.5 minutes after the first run
    const jobOptions = paymentEventJobOptions(resolvePaymentOptions({ ...BASE, processing: 'queue', redisUrl: 'redis://r:6379' }));
    expect(jobOptions).toMatchObject({ attempts: 10, backoff: { type: 'exponential', delay: 1000 } });
    // never BullMQ's removal by age (the age of whichever job failed last): each job keeps its own retention
    expect(jobOptions).toMatchObject({ removeOnFail: false, paymentDeadLetterRetentionMs: 30 * 24 * 3600 * 1000 });
    const lastRetryAfterS = Array.from({ length: 9 }, (_, i) => 2 ** i).reduce((a, b) => a + b, 0);
    expect(lastRetryAfterS).toBe(511);
  });

  it('reads PAYMENT_PROCESSING and PAYMENT_QUEUE_* variables; the queue uses redisUrl unless it has its own', () => {
    const env = readPaymentEnv(
      (name) =>
        ({
          PAYMENT_BASE_URL: 'http://127.0.0.1:9',
          PAYMENT_PROCESSING: 'queue',
          PAYMENT_REDIS_URL: 'redis://store:6379/0',
          PAYMENT_QUEUE_WORKER: 'false',
          PAYMENT_QUEUE_CONCURRENCY: '25',
          PAYMENT_QUEUE_ATTEMPTS: '4',
          PAYMENT_QUEUE_BACKOFF_MS: '250',
          PAYMENT_QUEUE_DEAD_LETTER_RETENTION_MS: '86400000',
          PAYMENT_QUEUE_SHUTDOWN_TIMEOUT_MS: '5000',
          PAYMENT_QUEUE_JOB_TIMEOUT_MS: '120000',
          PAYMENT_QUEUE_LOCK_DURATION_MS: '2000',
          PAYMENT_REDIS_TIMEOUT_MS: '5000',
          PAYMENT_QUEUE_MAX_STALLED_COUNT: '5',
        })[name],
    );
    const options = resolvePaymentOptions({}, env);
    expect(options).toMatchObject({
      processing: 'queue',
      queueRedisUrl: 'redis://store:6379/0',
      queueWorker: false,
      queueConcurrency: 25,
      queueAttempts: 4,
      queueBackoffMs: 250,
      queueDeadLetterRetentionMs: 86_400_000,
      queueShutdownTimeoutMs: 5000,
      queueJobTimeoutMs: 120_000,
      queueLockDurationMs: 2000,
      queueMaxStalledCount: 5,
      redisTimeoutMs: 5000,
    });
    expect(resolvePaymentOptions({ queueRedisUrl: 'redis://queue:6379/1' }, env).queueRedisUrl).toBe('redis://queue:6379/1');
    // BullMQ's own stall limit is out of reach: the worker applies queueMaxStalledCount once it holds the event's claim
    expect(paymentWorkerOptions(options)).toMatchObject({ concurrency: 25, lockDuration: 2000, stalledInterval: 1000, maxStalledCount: 1_000_000 });
  });

  it('a named account takes the unprefixed queue variables unless it has its own', () => {
    const vars: Record<string, string> = {
      PAYMENT_EU_BASE_URL: 'http://127.0.0.1:9',
      PAYMENT_PROCESSING: 'queue',
      PAYMENT_QUEUE_REDIS_URL: 'redis://shared:6379',
      PAYMENT_QUEUE_WORKER: 'false',
      PAYMENT_QUEUE_ATTEMPTS: '5',
      PAYMENT_EU_QUEUE_ATTEMPTS: '7',
      PAYMENT_REDIS_TIMEOUT_MS: '3000',
    };
    const eu = resolvePaymentOptions({}, readPaymentEnv((name) => vars[name], 'eu'), 'eu');
    expect(eu).toMatchObject({ processing: 'queue', queueRedisUrl: 'redis://shared:6379', queueWorker: false, queueAttempts: 7, redisTimeoutMs: 3000 });
    expect(paymentQueueLayout(eu)).toEqual({ name: 'eu', prefix: 'payment-gateway:sandbox:_queue' });
  });

  it('queue mode without any Redis URL, and bad queue values, are boot errors naming the keys', () => {
    const missing = problemsOf(() => resolvePaymentOptions({ ...BASE, processing: 'queue' }));
    expect(missing).toEqual([
      expect.stringMatching(/PAYMENT_QUEUE_REDIS_URL \(option 'queueRedisUrl'\) or PAYMENT_REDIS_URL \(option 'redisUrl'\) is required when processing is 'queue'/),
    ]);
    const named = problemsOf(() => resolvePaymentOptions({}, { baseUrl: BASE.baseUrl, processing: 'queue' }, 'eu'));
    expect(named.join('\n')).toContain('PAYMENT_EU_QUEUE_REDIS_URL');
    const bad = problemsOf(() =>
      resolvePaymentOptions(
        { processing: 'batch' as never, queueConcurrency: 0, queueAttempts: 101, queueBackoffMs: -1, queueLockDurationMs: 10, redisTimeoutMs: 50, queueMaxStalledCount: -1, queueJobTimeoutMs: 999 },
        { baseUrl: BASE.baseUrl, queueWorker: 'maybe', queueRedisUrl: 'http://not-redis' },
      ),
    ).join('\n');
    for (const key of ['processing', 'queueConcurrency', 'queueAttempts', 'queueBackoffMs', 'queueLockDurationMs', 'redisTimeoutMs', 'queueMaxStalledCount', 'queueJobTimeoutMs']) {
      expect(bad).toContain(`option '${key}'`);
    }
    expect(problemsOf(() => resolvePaymentOptions(BASE, { redisTimeoutMs: 'soon' })).join('\n')).toMatch(/PAYMENT_REDIS_TIMEOUT_MS.*whole number/);
    expect(bad).toContain('PAYMENT_QUEUE_WORKER');
    expect(bad).toContain('PAYMENT_QUEUE_REDIS_URL');
  });

  it('a retry schedule past a week (the backoff doubles without a ceiling) is a boot error naming both keys', () => {
    const tooLong = problemsOf(() => resolvePaymentOptions({ ...BASE, queueAttempts: 40 }));
    expect(tooLong).toEqual([
      expect.stringMatching(/option 'queueAttempts'.* and .*option 'queueBackoffMs'.* put the last retry more than a million days after the first run .*within 7 days/),
    ]);
    const fromEnv = problemsOf(() => resolvePaymentOptions({}, { baseUrl: BASE.baseUrl, queueAttempts: '12', queueBackoffMs: '3600000' }));
    expect(fromEnv.join('\n')).toMatch(/PAYMENT_QUEUE_ATTEMPTS.*PAYMENT_QUEUE_BACKOFF_MS.*put the last retry 85 days/);
    // the defaults (about 8.5 min) and the longest that fits (1 s × (2^19 − 1) ≈ 6 days) boot
    expect(resolvePaymentOptions(BASE).queueAttempts).toBe(10);
    expect(resolvePaymentOptions({ ...BASE, queueAttempts: 20 }).queueAttempts).toBe(20);
    expect(problemsOf(() => resolvePaymentOptions({ ...BASE, queueAttempts: 21 }))).toHaveLength(1);
  });

  it('keeps the queue Redis password out of JSON and inspect output', () => {
    const options = resolvePaymentOptions({ ...BASE, processing: 'queue', queueRedisUrl: 'redis://:s3cret-pw@queue:6379/2' });
    expect(options.queueRedisUrl).toBe('redis://:s3cret-pw@queue:6379/2');
    expect(JSON.stringify(options)).not.toContain('s3cret-pw');
    expect(inspect(options, { depth: 5 })).not.toContain('s3cret-pw');
  });
});

describe('queue-mode building blocks', () => {
  it('derives one job id per account and eventId that BullMQ accepts, whatever the eventId', () => {
    for (const eventId of ['evt_1', '123', 'a:b', 'a:b:c', 'ü/🙂 ', 'x'.repeat(512)]) {
      const id = paymentEventJobId('default', eventId);
      expect(id).toMatch(/^evt-[A-Za-z0-9_-]{43}$/);
      expect(paymentEventJobId('default', eventId)).toBe(id);
      expect(paymentEventJobId('eu', eventId)).not.toBe(id);
    }
    expect(paymentEventJobId('default', 'a')).not.toBe(paymentEventJobId('default', 'b'));
  });

  it('a missing bullmq (or ioredis) is a clear error naming what to install', () => {
    let error: unknown;
    try {
      loadBullMq({ bullmq: 'bullmq-not-installed-here', ioredis: 'ioredis' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BullMqMissingError);
    expect(error).toMatchObject({ code: 'BULLMQ_NOT_INSTALLED', missing: ['bullmq-not-installed-here'] });
    expect((error as Error).message).toContain('npm i bullmq ioredis');
    expect(() => loadBullMq({ bullmq: 'bullmq', ioredis: 'ioredis-not-installed-here' })).toThrow(BullMqMissingError);
    expect(typeof loadBullMq().Queue).toBe('function');
  });

  it('an app in queue mode without a Redis URL does not boot; an inline app has no dead letters', async () => {
    @Module({ imports: [PaymentModule.forRoot({ ...BASE, processing: 'queue', readEnv: false })] })
    class QueueWithoutRedis {}
    await expect(NestFactory.createApplicationContext(QueueWithoutRedis, { logger: false, abortOnError: false })).rejects.toThrow(
      PaymentConfigurationError,
    );

    @Module({ imports: [PaymentModule.forRoot({ ...BASE, readEnv: false })] })
    class InlineApp {}
    const app = await NestFactory.createApplicationContext(InlineApp, { logger: false });
    try {
      await expect(app.get(PaymentDeadLetterService).list()).rejects.toThrow(/processing: 'queue'/);
    } finally {
      await app.close();
    }
  });
});

describe('fastestDeadLetterMs (how stale a delivery\'s read of its job may get before it is read again)', () => {
  const resolved = (extra: Record<string, unknown>) =>
    resolvePaymentOptions({ ...BASE, processing: 'queue', redisUrl: 'redis://r:6379', ...extra });
  it.each([
    ['the defaults: the first take-over (one lock) is faster than the retries', {}, 30_000],
    ['no backoff: at once', { queueBackoffMs: 0 }, 0],
    ['one attempt: no retry to wait for', { queueAttempts: 1 }, 0],
    ['3 attempts from 100 ms: 80 + 160 ms, jitter taken off', { queueAttempts: 3, queueBackoffMs: 100 }, 240],
  ])('%s', (_, extra, ms) => {
    expect(fastestDeadLetterMs(resolved(extra))).toBe(ms);
  });
});
