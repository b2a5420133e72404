// Child process of the queue benchmark. `web <express|fastify>`: the module's webhook route in
// queue mode without a worker (web-only) beside a bare JSON route and the "floor" route (the least
// a controller can do to queue a signed event on BullMQ: HMAC, parse, a processed-check GET and
// one `add` with the event's job id, on a queue of its own). `worker`: an application
// context that only works, with one no-op handler counting runs per eventId.
// Settings from env: BENCH_REDIS_URL, BENCH_KEY_PREFIX. Prints `READY <port|worker>`; answers
// `{ type: 'stats' }` and `{ type: 'ids' }` IPC messages.
import 'reflect-metadata';
import { Body, Controller, HttpCode, Injectable, Module, type OnApplicationShutdown, Post, Req, UnauthorizedException } from '@nestjs/common';
import { Queue } from 'bullmq';
import Redis from 'ioredis';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import type { AnyPaymentEvent } from '../../lib/events/payment-event.types.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { BENCH_WEBHOOK_SECRET } from './bench-util.js';

@Injectable()
class CountingHandler {
  readonly runs = new Map<string, number>();
  handled = 0;

  @OnPaymentEvent('payment.succeeded')
  onSucceeded(event: AnyPaymentEvent): void {
    this.handled++;
    this.runs.set(event.eventId, (this.runs.get(event.eventId) ?? 0) + 1);
  }
}

@Controller('bare')
class BareController {
  @Post()
  @HttpCode(200)
  receive(@Body() body: unknown): { received: boolean } {
    return { received: typeof body === 'object' && body !== null };
  }
}

const SIGNATURE = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/;

@Controller('floor')
class FloorController implements OnApplicationShutdown {
  private readonly redis = new Redis(process.env.BENCH_REDIS_URL!, { maxRetriesPerRequest: null });
  private readonly queue = new Queue('floor', { connection: this.redis, prefix: `${process.env.BENCH_KEY_PREFIX}floor` });

  @Post()
  @HttpCode(200)
  async receive(@Req() request: { headers: Record<string, string | undefined>; rawBody: Buffer }): Promise<{ received: boolean; queued?: boolean }> {
    const match = SIGNATURE.exec(request.headers['x-service-signature'] ?? '');
    if (!match) throw new UnauthorizedException();
    const expected = createHmac('sha256', BENCH_WEBHOOK_SECRET).update(`${match[1]}.`).update(request.rawBody).digest();
    if (!timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'))) throw new UnauthorizedException();
    const event = JSON.parse(request.rawBody.toString('utf8')) as { eventId: string; eventType: string };
    if ((await this.redis.get(`floor:processed:${event.eventId}`)) === 'processed') return { received: true };
    await this.queue.add(event.eventType, event, { jobId: event.eventId, removeOnComplete: true });
    return { received: true, queued: true };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
    this.redis.disconnect();
  }
}

const role = process.argv[2] === 'worker' ? 'worker' : 'web';

@Module({
  imports: [
    PaymentModule.forRoot({
      baseUrl: 'http://127.0.0.1:9',
      webhookSecret: BENCH_WEBHOOK_SECRET,
      processing: 'queue',
      queueRedisUrl: process.env.BENCH_REDIS_URL,
      redisKeyPrefix: process.env.BENCH_KEY_PREFIX,
      queueWorker: role === 'worker',
      readEnv: false,
    }),
  ],
  controllers: role === 'web' ? [BareController, FloorController] : [],
  providers: [CountingHandler],
})
class QueueBenchModule {}

async function main(): Promise<void> {
  let port: number | undefined;
  let close: () => Promise<void>;
  let handler: CountingHandler;
  if (role === 'worker') {
    const context = await NestFactory.createApplicationContext(QueueBenchModule, { logger: false });
    handler = context.get(CountingHandler);
    close = () => context.close();
  } else {
    const adapter = process.argv[3] === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
    const app = await NestFactory.create(QueueBenchModule, adapter, { rawBody: true, logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    handler = app.get(CountingHandler);
    close = () => app.close();
  }
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'stats') {
      let duplicates = 0;
      for (const n of handler.runs.values()) duplicates += n - 1;
      const cpu = process.cpuUsage();
      process.send?.({ type: 'stats', handled: handler.handled, duplicates, cpuMicros: cpu.user, systemMicros: cpu.system });
    }
    if (message?.type === 'ids') process.send?.({ type: 'ids', ids: [...handler.runs.keys()] });
    if (message?.type === 'stop') void close().then(() => process.exit(0));
  });
  process.stdout.write(`READY ${port ?? 'worker'}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`queue bench app failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
