// Child process of the webhook throughput benchmark: one Nest app with the module's
// webhook route, a bare JSON route, and the "floor" route (the least a Nest controller can do
// for this job: check the HMAC, parse, remember ids in a Set, call the handler), so all three
// are measured on the same server.
// Usage: node webhook-bench-app.js <express|fastify>; prints `READY <port>` and answers
// `{ type: 'stats' }` IPC messages with the handler count, CPU time and young-generation GCs.
import 'reflect-metadata';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks';
import { Body, Controller, HttpCode, Injectable, Module, Post, Req, UnauthorizedException } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { registerBenchOtelSdk } from './bench-otel-sdk.js';
import { BENCH_WEBHOOK_SECRET } from './bench-util.js';

@Injectable()
class NoopPaymentHandler {
  handled = 0;
  /** Runs of the floor route's "handler" (the same no-op), counted apart. */
  floorHandled = 0;

  @OnPaymentEvent('payment.succeeded')
  onSucceeded(): void {
    this.handled++;
  }
}

@Controller('bare')
class BareController {
  @Post()
  @HttpCode(200)
  receive(@Body() body: unknown): { received: boolean } {
    // Touch the parsed body so the JSON parse cannot be skipped.
    return { received: typeof body === 'object' && body !== null };
  }
}

const SIGNATURE = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/;

@Controller('floor')
class FloorController {
  private readonly seen = new Set<string>();

  constructor(private readonly handler: NoopPaymentHandler) {}

  @Post()
  @HttpCode(200)
  receive(@Req() request: { headers: Record<string, string | undefined>; rawBody: Buffer }): { received: boolean } {
    const match = SIGNATURE.exec(request.headers['x-service-signature'] ?? '');
    if (!match) throw new UnauthorizedException();
    const expected = createHmac('sha256', BENCH_WEBHOOK_SECRET).update(`${match[1]}.`).update(request.rawBody).digest();
    if (!timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'))) throw new UnauthorizedException();
    const event = JSON.parse(request.rawBody.toString('utf8')) as { eventId: string };
    if (!this.seen.has(event.eventId)) {
      this.seen.add(event.eventId);
      this.handler.floorHandled++;
    }
    return { received: true };
  }
}

@Module({
  imports: [PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', webhookSecret: BENCH_WEBHOOK_SECRET })],
  controllers: [BareController, FloorController],
  providers: [NoopPaymentHandler],
})
class BenchAppModule {}

/** Young-generation collections (scavenges) so far: each one pauses every request in flight. */
const youngGc = { count: 0, totalMs: 0 };

function observeYoungGc(): void {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind !== perfConstants.NODE_PERFORMANCE_GC_MINOR) continue;
      youngGc.count++;
      youngGc.totalMs += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });
}

async function main(): Promise<void> {
  registerBenchOtelSdk(); // only with BENCH_OTEL=sdk
  observeYoungGc();
  const kind = process.argv[2] === 'fastify' ? 'fastify' : 'express';
  const adapter = kind === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const app = await NestFactory.create(BenchAppModule, adapter, { rawBody: true, logger: false });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as { port: number }).port;
  const handler = app.get(NoopPaymentHandler);
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'stats') {
      const cpu = process.cpuUsage();
      // user time only: system time is mostly waking the load generator, which a slower reply finds asleep
      process.send?.({ type: 'stats', handled: handler.handled, cpuMicros: cpu.user, youngGcs: youngGc.count, youngGcMs: youngGc.totalMs });
    }
    if (message?.type === 'stop') void app.close().then(() => process.exit(0));
  });
  process.stdout.write(`READY ${port}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench app failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
