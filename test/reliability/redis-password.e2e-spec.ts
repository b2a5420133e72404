import 'reflect-metadata';
import { inspect } from 'node:util';
import { type ArgumentsHost, Catch, type INestApplication } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { Redis } from 'ioredis';
import { PaymentHealthIndicator } from '../../lib/health/payment-health.indicator.js';
import { RedisWebhookEventStore } from '../../lib/stores/redis-webhook-event.store.js';
import { startChildApp } from '../support/child-app.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { startQueueApp, waitFor } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET } from '../support/webhooks-app.js';

// A Redis that requires AUTH, so the password in the URL is really sent, and a wrong one
// really refused (WRONGPASS), instead of the unreachable servers of the other secret tests.
const PASSWORD = 'rq:Pa55-w0rd-auth';
const WRONG_PASSWORD = 'wr0ng-Pa55-guess';

/** What an operator could see of the app: its logs, the answers, the health result (as JSON and as inspected). */
async function seenByOperator(app: INestApplication, logger: CollectingLogger, answers: unknown[]): Promise<string> {
  const health = await app.get(PaymentHealthIndicator).isHealthy('payments');
  return [...logger.rendered, JSON.stringify(answers), JSON.stringify(health), inspect(health, { depth: 8 })].join('\n');
}

function expectNoPassword(text: string): void {
  for (const secret of [PASSWORD, encodeURIComponent(PASSWORD), WRONG_PASSWORD, 'Pa55']) expect(text).not.toContain(secret);
}

/** Everything an error holds, hidden properties and the whole cause chain included. */
const inspectAll = (value: unknown): string => inspect(value, { depth: Infinity, showHidden: true });

/**
 * What a JSON logger prints of an object (Nest's `ConsoleLogger` with `json: true`, pino): its
 * JSON, `toJSON()` honoured, a reference met again printed as `[Circular]` rather than thrown on.
 */
function jsonOfLogger(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return String(v);
    if (typeof v !== 'object' || v === null) return v;
    if (seen.has(v)) return '[Circular]';
    seen.add(v);
    return v;
  });
}

/** A host's "log every exception" filter: what it would print of each exception. */
@Catch()
class InspectingExceptionFilter extends BaseExceptionFilter {
  readonly seen: string[] = [];

  override catch(exception: unknown, host: ArgumentsHost): void {
    this.seen.push(inspectAll(exception));
    super.catch(exception, host);
  }
}

describe('reliability: a password-protected Redis (requirepass)', () => {
  let redis: TestRedisServer;
  const closers: Array<() => Promise<void>> = [];
  const urlWith = (password: string) => `redis://:${encodeURIComponent(password)}@127.0.0.1:${redis.port}`;

  beforeAll(async () => {
    redis = await startRedisServer({ requirePass: PASSWORD });
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(() => redis?.stop());

  it('the event store authenticates with the password of its URL: handled once, the copy a duplicate, health up', async () => {
    const logger = new CollectingLogger();
    const w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: urlWith(PASSWORD) } });
    closers.push(() => w.close());
    const event = envelope();
    const first = await postWebhook(w.url, event);
    const copy = await postWebhook(w.url, event);
    expect([first.status, first.json]).toEqual([200, { received: true }]);
    expect([copy.status, copy.json]).toEqual([200, { received: true, duplicate: true }]);
    expect(w.handlers.count('payment.*', event.eventId as string)).toBe(1);
    const health = await w.app.get(PaymentHealthIndicator).isHealthy('payments');
    expect(health.payments.status).toBe('up');
    expectNoPassword(await seenByOperator(w.app, logger, [first, copy]));
  });

  it('a wrong password: 503 WEBHOOK_STORE_UNAVAILABLE, health down, and no password in logs, answers or health', async () => {
    const logger = new CollectingLogger();
    const w = await startWebhookApp({ adapter: 'express', logger, payment: { redisUrl: urlWith(WRONG_PASSWORD), redisTimeoutMs: 500 } });
    closers.push(() => w.close());
    const event = envelope();
    const answer = await postWebhook(w.url, event);
    expect([answer.status, answer.json.code]).toEqual([503, 'WEBHOOK_STORE_UNAVAILABLE']);
    expect(w.handlers.calls).toEqual([]);
    const health = await w.app.get(PaymentHealthIndicator).isHealthy('payments');
    expect(health.payments.status).toBe('down');
    const seen = await seenByOperator(w.app, logger, [answer]);
    expect(logger.rendered.length).toBeGreaterThan(0); // the refusal was logged
    expectNoPassword(seen);
  });

  it('queue mode: the queue and its worker authenticate with the password of the queue URL', async () => {
    const logger = new CollectingLogger();
    const q = await startQueueApp(urlWith(PASSWORD), { logger });
    closers.push(() => q.close());
    const event = envelope();
    const queued = await postWebhook(q.url, event);
    expect([queued.status, queued.json]).toEqual([200, { received: true, queued: true }]);
    await waitFor('the worker handled the event', () => q.handlers.count('done', event.eventId as string) === 1);
    expect((await q.app.get(PaymentHealthIndicator).isHealthy('payments')).payments.status).toBe('up');
    expectNoPassword(await seenByOperator(q.app, logger, [queued]));
  });

  it('queue mode, a wrong password: 503 WEBHOOK_QUEUE_UNAVAILABLE, health down, no password printed', async () => {
    const logger = new CollectingLogger();
    const q = await startQueueApp(urlWith(WRONG_PASSWORD), { logger, payment: { redisTimeoutMs: 500 } });
    closers.push(() => q.close());
    const event = envelope();
    const refused = await postWebhook(q.url, event);
    expect([refused.status, refused.json.code]).toEqual([503, 'WEBHOOK_QUEUE_UNAVAILABLE']);
    expect(q.handlers.count('entered', event.eventId as string)).toBe(0);
    // the outage line says why, not ioredis' "Stream isn't writeable"
    const outage = logger.lines.filter((l) => l.context === 'PaymentQueue' && l.level === 'error');
    expect(outage.map((l) => l.message)).toEqual([expect.stringMatching(/is unavailable; .*: Redis is not connected \(status: \w+\): WRONGPASS/)]);
    expect((await q.app.get(PaymentHealthIndicator).isHealthy('payments')).payments.status).toBe('down');
    expectNoPassword(await seenByOperator(q.app, logger, [refused]));
  });

  // ioredis' refusal of the first connection carries the AUTH command it sent, password included
  // (err.command.args): it must not reach a host's exception filter as the exception's cause.
  it.each(['inline', 'queue'] as const)('a wrong password (%s): the exception a host\'s global filter gets holds no password, however deeply inspected', async (mode) => {
    const filter = (app: INestApplication) => {
      const recording = new InspectingExceptionFilter(app.getHttpAdapter());
      app.useGlobalFilters(recording);
      return recording;
    };
    let recording!: InspectingExceptionFilter;
    const url = urlWith(WRONG_PASSWORD);
    const payment = mode === 'queue' ? { processing: 'queue' as const, queueRedisUrl: url, queueWorker: false } : { redisUrl: url };
    const w = await startWebhookApp({ adapter: 'express', payment: { ...payment, redisTimeoutMs: 500 }, configure: (app) => (recording = filter(app)) });
    closers.push(() => w.close());
    const answer = await postWebhook(w.url, envelope());
    expect([answer.status, answer.json.code]).toEqual([503, mode === 'queue' ? 'WEBHOOK_QUEUE_UNAVAILABLE' : 'WEBHOOK_STORE_UNAVAILABLE']);
    expect(recording.seen).toHaveLength(1);
    expect(recording.seen[0]).toContain('WRONGPASS'); // the reason is kept, without the secret
    expectNoPassword(recording.seen[0]);
  });

  it('a store refused by Redis (wrong password, then a wrong ACL user): its rejections hold no password, however deeply inspected', async () => {
    const admin = new Redis({ port: redis.port, password: PASSWORD });
    await admin.call('ACL', 'SETUSER', 'shop', 'on', `>${PASSWORD}`, '~*', '+@all');
    await admin.quit();
    for (const url of [urlWith(WRONG_PASSWORD), `redis://nobody:${encodeURIComponent(PASSWORD)}@127.0.0.1:${redis.port}`]) {
      const store = new RedisWebhookEventStore(url, { operationTimeoutMs: 500 });
      closers.push(() => store.close());
      // the first call meets the refusal itself, the next one the connection it left down
      const first = await store.claim('k1', 1000).catch((error: unknown) => error);
      const next = await store.claim('k2', 1000).catch((error: unknown) => error);
      expect(first).toMatchObject({ code: 'WEBHOOK_STORE_UNAVAILABLE', message: expect.stringMatching(/WRONGPASS/) });
      expect(next).toMatchObject({ code: 'WEBHOOK_STORE_UNAVAILABLE' });
      expectNoPassword(inspectAll(first) + inspectAll(next));
    }
  });

  it("queue mode: no provider of the app shows a secret when a JSON logger serialises it or it is inspected (Nest's own internals aside)", async () => {
    const CLIENT_SECRET = 'cs_never_printed_42';
    const url = urlWith(PASSWORD);
    const q = await startQueueApp(url, { payment: { redisUrl: url, clientId: 'shop', clientSecret: CLIENT_SECRET } });
    closers.push(() => q.close());
    expect(await postWebhook(q.url, envelope())).toMatchObject({ status: 200 });
    // the container's own services reach every provider and option object: their output is Nest's
    const nestInternal = /^(ModuleRef|ApplicationConfig|Reflector|HttpAdapterHost|LazyModuleLoader|DiscoveryService|MetadataScanner|ModulesContainer|SerializedGraph|ExternalContextCreator)$/;
    const container = (q.app as unknown as { container: { getModules(): Map<string, { providers: Map<unknown, { name: unknown; instance: unknown }> }> } }).container;
    let checked = 0;
    const shown: string[] = [];
    for (const module of container.getModules().values()) {
      for (const [token, wrapper] of module.providers) {
        const name = typeof token === 'function' ? token.name : String(token);
        if (wrapper.instance === null || typeof wrapper.instance !== 'object' || nestInternal.test(name)) continue;
        checked++;
        const text = `${jsonOfLogger(wrapper.instance)}\n${inspect(wrapper.instance, { depth: 12, showHidden: true })}`;
        const secrets = { password: PASSWORD, 'encoded password': encodeURIComponent(PASSWORD), 'client secret': CLIENT_SECRET, 'webhook secret': WEBHOOK_SECRET };
        for (const [what, secret] of Object.entries(secrets)) if (text.includes(secret)) shown.push(`${name}: ${what}`);
      }
    }
    expect(shown).toEqual([]);
    expect(checked).toBeGreaterThan(20);
  });

  it('a refused password: the console shows neither password nor ioredis\' own error print, and the process ends soon after app.close()', async () => {
    const url = urlWith(WRONG_PASSWORD);
    const child = await startChildApp('test/reliability/fixtures/closing-app.ts', {
      PAYMENT_BASE_URL: 'http://127.0.0.1:9',
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      PAYMENT_REDIS_URL: url,
      PAYMENT_PROCESSING: 'queue',
      PAYMENT_QUEUE_REDIS_URL: url,
      PAYMENT_REDIS_TIMEOUT_MS: '500',
    });
    closers.push(() => child.kill());
    const refused = await postWebhook(child.url!, envelope());
    expect([refused.status, refused.json.code]).toEqual([503, 'WEBHOOK_QUEUE_UNAVAILABLE']);
    const exited = new Promise<number | null>((resolve) => child.proc.once('exit', (code) => resolve(code)));
    child.proc.kill('SIGTERM');
    expect(await exited).toBe(0);
    const output = child.output();
    expect(output).toContain('CLOSED');
    expect(output).toContain('WRONGPASS'); // the cause is told, through the Nest logger
    expect(output).not.toContain('STILL RUNNING');
    expect(output).not.toContain('[ioredis]');
    expectNoPassword(output);
  });
});
