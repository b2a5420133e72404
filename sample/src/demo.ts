import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PAYMENT_ENV_VARIABLES } from 'nestjs-payment-gateway';
import { PaymentServiceSimulator } from 'nestjs-payment-gateway/testing';
import { AppModule } from './app.module.js';
import { reviewDemoRun } from './demo-report.js';
import type { Order, ProcessedEvent } from './orders/order.types.js';

/**
 * `npm start`: the whole flow offline. A simulated payment service confirms an order's
 * payment asynchronously and delivers every webhook twice and out of order; the shop
 * must end with the order PAID and fulfilled exactly once. Exit 0 only if it does.
 */

const TIMEOUT_MS = Number(process.env.SHOP_DEMO_TIMEOUT_MS ?? 30_000);
const MERCHANT_ID = 1;

async function main(): Promise<void> {
  const workDir = mkdtempSync(join(tmpdir(), 'shop-demo-'));
  const dbPath = join(workDir, 'shop.sqlite');
  // Fresh credentials per run; they are handed to the app through the environment and never printed.
  const clientSecret = randomBytes(16).toString('hex');
  const webhookSecret = `whsec_${randomBytes(16).toString('hex')}`;

  const sim = new PaymentServiceSimulator({
    merchants: [{ merchantId: MERCHANT_ID, clientId: 'demo-shop', clientSecret, webhookSecret, mode: 'sandbox' }],
    webhookTimeScale: 1e-5, // spec retry delays (5 min … 24 h) become milliseconds
    confirmationDelayMs: 50,
  });
  let app: INestApplication | undefined;

  try {
    await sim.start();

    // The demo must not pick up a real service from the shell or sample/.env.
    for (const name of Object.values(PAYMENT_ENV_VARIABLES)) delete process.env[name];
    Object.assign(process.env, {
      PAYMENT_BASE_URL: sim.url,
      PAYMENT_ENVIRONMENT: 'sandbox',
      PAYMENT_CLIENT_ID: 'demo-shop',
      PAYMENT_CLIENT_SECRET: clientSecret,
      PAYMENT_WEBHOOK_SECRET: webhookSecret,
      SHOP_DATABASE_PATH: dbPath,
    });

    app = await NestFactory.create(AppModule.register({ envFile: false }), {
      rawBody: true,
      logger: ['error', 'warn'],
      abortOnError: false, // throw, so the demo reports and cleans up
    });
    await app.listen(0, '127.0.0.1');
    const shopUrl = (await app.getUrl()).replace('[::1]', '127.0.0.1');

    sim.setWebhookUrl(MERCHANT_ID, `${shopUrl}/payments/webhook`);
    sim.setDeliveryFaults({ duplicate: true, outOfOrder: true });
    sim.scriptNextPayment('pending-then-succeed');

    line(`Payment demo (offline): simulated service ${sim.url}, shop ${shopUrl}`);
    line(`SQLite database: ${dbPath}`);
    line('Simulator: payment confirmed asynchronously, every webhook sent twice, created/pending events held back and sent late');
    line('');

    const placed = await http<{ order: Order; payment: { trxId: string | null; pending: boolean } }>('POST', `${shopUrl}/orders`, {
      items: [
        { sku: 'TSHIRT-M', quantity: 2, unitPrice: '12.50' },
        { sku: 'STICKER', quantity: 1, unitPrice: '1.99' },
      ],
      currency: 'USD',
    });
    const orderId = placed.order.id;
    line(
      `1. Order placed: ${orderId}, ${placed.order.amount} ${placed.order.currency}, status ${placed.order.status}; ` +
        `payment ${placed.payment.trxId ?? '(id to come by webhook)'} opened${placed.payment.pending ? ' (202: awaiting provider confirmation)' : ''}`,
    );

    const paid = await waitFor(async () => {
      const order = await http<Order>('GET', `${shopUrl}/orders/${orderId}`);
      return order.status === 'PAID' ? order : undefined;
    }, 'the order to become PAID');
    // Let the late (out-of-order) events and every duplicate arrive too.
    await withTimeout(sim.waitForDeliveries(), 'the simulator to finish its deliveries');

    const audit = await http<ProcessedEvent[]>('GET', `${shopUrl}/orders/${orderId}/events`);
    const final = await http<Order>('GET', `${shopUrl}/orders/${orderId}`);
    const deliveries = sim.deliveryLog.filter((d) => d.url.includes('/payments/webhook'));

    line('2. Webhook deliveries, in the order the simulator sent them:');
    const { lines, summary, problems } = reviewDemoRun(deliveries, audit, final);
    for (const text of lines) line(text);
    line(`3. Order ${orderId} is ${final.status} (paid at ${paid.paidAt}); fulfilled ${final.fulfilments} time(s), counted in SQLite`);

    line('');
    if (problems.length > 0) throw new Error(`Demo checks failed: ${problems.join('; ')}`);
    line(
      `OK: ${deliveries.length} deliveries, ${summary.handled} events handled once each, ` +
        `${summary.duplicatesIgnored} duplicates ignored, ${summary.lateIgnored} out-of-order events left the order as it was, ` +
        'order paid and fulfilled once.',
    );
  } finally {
    // Simulator first: no delivery may reach the shop while it shuts down.
    await sim.stop().catch(() => undefined);
    await app?.close().catch(() => undefined);
    if (!process.env.SHOP_DEMO_KEEP_DB) rmSync(workDir, { recursive: true, force: true });
  }
}

async function http<T>(method: 'GET' | 'POST', url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${new URL(url).pathname} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (;;) {
    const value = await withTimeout(probe(), what);
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`Timed out after ${TIMEOUT_MS} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

let deadline = 0;
function withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  const left = Math.max(0, deadline - Date.now());
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${TIMEOUT_MS} ms waiting for ${what}`)), left);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function line(text: string): void {
  process.stdout.write(`${text}\n`);
}

deadline = Date.now() + TIMEOUT_MS;
// Last resort if shutdown itself hangs.
const killSwitch = setTimeout(() => {
  process.stderr.write(`Demo FAILED: still running after ${TIMEOUT_MS + 10_000} ms\n`);
  process.exit(1);
}, TIMEOUT_MS + 10_000);
killSwitch.unref();

main().then(
  () => {
    process.exitCode = 0;
  },
  (error: unknown) => {
    process.stderr.write(`Demo FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
