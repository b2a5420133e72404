import 'reflect-metadata';
import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentHealthIndicator } from '../../lib/health/payment-health.indicator.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { PaymentServiceSimulator } from '../../lib/testing/index.js';
import { SANDBOX_CLIENT } from '../support/client-simulator.js';
import { unusedLoopbackPort } from '../support/loopback-port.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

/** The README's recipe: `GET /health` with terminus; `/health/auth` also checks the credentials. */
@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly payments: PaymentHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.payments.isHealthy('payments')]);
  }

  @Get('auth')
  @HealthCheck()
  checkWithAuthentication() {
    return this.health.check([() => this.payments.isHealthy('payments', { include: ['authentication'] })]);
  }

  @Get('default')
  @HealthCheck()
  checkDefaultAccount() {
    return this.health.check([() => this.payments.isHealthy('payments', { accounts: ['default'] })]);
  }
}

async function getHealth(w: WebhookApp, path = 'health'): Promise<{ status: number; body: any }> {
  const response = await fetch(`${w.url}/${path}`);
  return { status: response.status, body: await response.json() };
}

/** Polls until the health answer has `status` (the Redis client notices a stop or a restart within ~2 s). */
async function healthBecomes(w: WebhookApp, status: number, timeoutMs = 15_000): Promise<{ status: number; body: any }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await getHealth(w);
    if (answer.status === status || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function healthApp(payment: Record<string, unknown>, extraImports: any[] = []): Promise<WebhookApp> {
  return startWebhookApp({ adapter: 'express', payment, extraImports: [TerminusModule, ...extraImports], controllers: [HealthController] });
}

describe('PaymentHealthIndicator with @nestjs/terminus', () => {
  let w: WebhookApp | undefined;
  afterEach(async () => {
    await w?.close();
    w = undefined;
  });

  describe('with a real redis-server', () => {
    let redis: TestRedisServer;
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => redis?.stop());

    it('GET /health is up with Redis running, 503 naming the store while it is stopped, up again after restart', async () => {
      w = await healthApp({ redisUrl: redis.url });
      const up = await getHealth(w);
      expect(up.status).toBe(200);
      expect(up.body).toMatchObject({ status: 'ok', error: {} });
      expect(up.body.info.payments).toEqual({
        status: 'up',
        accounts: { default: { store: { status: 'up', kind: 'redis', url: redis.url, latencyMs: expect.any(Number) } } },
      });

      await redis.stop();
      const down = await healthBecomes(w, 503);
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('error');
      const payments = down.body.error.payments;
      expect(payments.status).toBe('down');
      expect(payments.reason).toMatch(/^default\/store: /);
      expect(payments.accounts.default.store).toMatchObject({ status: 'down', kind: 'redis', url: redis.url, reason: expect.stringMatching(/Redis/) });
      expect(down.body.details.payments).toEqual(payments);

      await redis.restart();
      const again = await healthBecomes(w, 200);
      expect(again.status).toBe(200);
      expect(again.body.info.payments.accounts.default.store.status).toBe('up');
    });

    it('in queue mode, right after boot: up, the queue connection still being made is waited for', async () => {
      w = await healthApp({ processing: 'queue', queueWorker: false, redisUrl: redis.url });
      const first = await getHealth(w);
      expect(first.body.info?.payments.accounts.default).toMatchObject({ store: { status: 'up' }, queue: { status: 'up' } });
      expect(first.status).toBe(200);
    });

    // Redis answers PING while it refuses every write: the probes write, as deliveries do.
    describe('a Redis that refuses writes', () => {
      let admin: Redis;
      beforeAll(() => {
        admin = new Redis(redis.url);
      });
      afterEach(async () => {
        await admin.config('SET', 'maxmemory', '0');
        await admin.call('REPLICAOF', 'NO', 'ONE');
      });
      afterAll(() => admin.quit());

      const storeDown = async (reason: RegExp) => {
        expect((await postWebhook(w!.url, envelope())).json.code).toBe('WEBHOOK_STORE_UNAVAILABLE');
        const down = await getHealth(w!);
        expect(down.status).toBe(503);
        expect(down.body.error.payments.accounts.default.store).toMatchObject({ status: 'down', kind: 'redis', code: 'WEBHOOK_STORE_UNAVAILABLE', reason });
      };

      it('full (maxmemory reached, noeviction): deliveries are refused 503 and the store is down with the reason', async () => {
        w = await healthApp({ redisUrl: redis.url });
        expect((await getHealth(w)).status).toBe(200);
        await admin.config('SET', 'maxmemory', '1');
        await storeDown(/OOM/);
        await admin.config('SET', 'maxmemory', '0');
        expect((await getHealth(w)).status).toBe(200);
      });

      it('a read-only replica: the store is down with the reason', async () => {
        w = await healthApp({ redisUrl: redis.url });
        // a replica of a primary that is not there: it refuses writes at once
        await admin.call('REPLICAOF', '127.0.0.1', String(await unusedLoopbackPort()));
        await storeDown(/READONLY/);
      });

      it('in queue mode, the queue\'s Redis full: deliveries are refused 503 and the queue is down (store up)', async () => {
        const queueRedis = await startRedisServer();
        const queueAdmin = new Redis(queueRedis.url);
        try {
          w = await healthApp({ processing: 'queue', queueWorker: false, redisUrl: redis.url, queueRedisUrl: queueRedis.url });
          expect((await getHealth(w)).status).toBe(200);
          await queueAdmin.config('SET', 'maxmemory', '1');
          expect((await postWebhook(w.url, envelope())).json.code).toBe('WEBHOOK_QUEUE_UNAVAILABLE');
          const down = await getHealth(w);
          expect(down.status).toBe(503);
          expect(down.body.error.payments.reason).toMatch(/^default\/queue: .*OOM/);
          expect(down.body.error.payments.accounts.default).toMatchObject({
            store: { status: 'up' },
            queue: { status: 'down', code: 'WEBHOOK_QUEUE_UNAVAILABLE', reason: expect.stringMatching(/OOM/) },
          });
        } finally {
          await w?.close();
          w = undefined;
          await queueAdmin.quit();
          await queueRedis.stop();
        }
      });
    });

    it('reports each account: the memory store is always up, the Redis one named by account; `accounts` picks some', async () => {
      w = await healthApp({}, [PaymentModule.forRoot({ account: 'eu', baseUrl: 'http://127.0.0.1:9', webhookSecret: 'whsec_eu', redisUrl: redis.url })]);
      const up = await getHealth(w);
      expect(up.status).toBe(200);
      expect(up.body.info.payments.accounts).toEqual({
        default: { store: { status: 'up', kind: 'memory', latencyMs: expect.any(Number) } },
        eu: { store: { status: 'up', kind: 'redis', url: redis.url, latencyMs: expect.any(Number) } },
      });

      await redis.stop();
      try {
        const down = await healthBecomes(w, 503);
        expect(down.body.error.payments.reason).toMatch(/^eu\/store: /);
        expect(down.body.error.payments.accounts.default.store.status).toBe('up');
        // only the default account asked for: up
        const defaultOnly = await getHealth(w, 'health/default');
        expect(defaultOnly.status).toBe(200);
        expect(Object.keys(defaultOnly.body.info.payments.accounts)).toEqual(['default']);
      } finally {
        await redis.restart();
      }
    });
  });

  it('never shows the Redis password: the URL is redacted in details and reasons', async () => {
    const password = 'h3alth-redis-pa55word';
    const port = await unusedLoopbackPort();
    w = await healthApp({ redisUrl: `redis://:${password}@127.0.0.1:${port}` });
    const down = await getHealth(w);
    expect(down.status).toBe(503);
    expect(down.body.error.payments.accounts.default.store).toMatchObject({ status: 'down', kind: 'redis', url: `redis://:[redacted]@127.0.0.1:${port}` });
    expect(JSON.stringify(down.body)).not.toContain(password);
  });

  it('says why Redis is not connected: a refused password (store and queue) is named, never the password', async () => {
    const redis = await startRedisServer({ requirePass: 'the-right-pa55word' });
    try {
      const url = redis.url.replace('redis://', 'redis://:a-wrong-pa55word@');
      w = await healthApp({ processing: 'queue', queueWorker: false, redisUrl: url, queueRedisUrl: url });
      // the refusals arrive after boot: asked until both probes have one to tell
      let down = await getHealth(w);
      for (let i = 0; i < 50 && !/WRONGPASS[^]*WRONGPASS/.test(JSON.stringify(down.body)); i++) down = await getHealth(w);
      expect(down.status).toBe(503);
      expect(down.body.error.payments.accounts.default).toMatchObject({
        store: { status: 'down', reason: expect.stringMatching(/WRONGPASS/) },
        queue: { status: 'down', reason: expect.stringMatching(/^Redis is not connected \(status: \w+\): .*WRONGPASS/) },
      });
      expect(JSON.stringify(down.body)).not.toContain('pa55word');
    } finally {
      await redis.stop();
    }
  });

  it('in queue mode with a Redis of its own for the queue, reports the queue down while that Redis is (store up)', async () => {
    const redis = await startRedisServer();
    try {
      const password = 'qu3ue-own-pa55word';
      const port = await unusedLoopbackPort();
      const queueRedisUrl = `redis://:${password}@127.0.0.1:${port}`;
      w = await healthApp({ processing: 'queue', queueWorker: false, redisUrl: redis.url, queueRedisUrl });
      // what the service meets: every delivery is refused 503
      expect((await postWebhook(w.url, envelope())).json.code).toBe('WEBHOOK_QUEUE_UNAVAILABLE');
      const down = await getHealth(w);
      expect(down.status).toBe(503);
      expect(down.body.error.payments.reason).toMatch(/^default\/queue: Redis is not connected/);
      expect(down.body.error.payments.accounts.default).toMatchObject({
        store: { status: 'up', kind: 'redis' },
        queue: { status: 'down', code: 'WEBHOOK_QUEUE_UNAVAILABLE', url: `redis://:[redacted]@127.0.0.1:${port}` },
      });
      expect(JSON.stringify(down.body)).not.toContain(password);
    } finally {
      await w?.close();
      w = undefined;
      await redis.stop();
    }
  });

  it('in queue mode without a worker, exclude: [\'store\'] keeps readiness up while the store is down and the route still queues', async () => {
    const [storeRedis, queueRedis] = await Promise.all([startRedisServer(), startRedisServer()]);
    try {
      w = await healthApp({ processing: 'queue', queueWorker: false, redisUrl: storeRedis.url, queueRedisUrl: queueRedis.url });
      await storeRedis.stop();
      // the route needs only the queue: the workers claim the event in the store once it is back
      expect((await postWebhook(w.url, envelope())).json).toEqual({ received: true, queued: true });
      const indicator = w.app.get(PaymentHealthIndicator);
      expect((await indicator.isHealthy()).payments).toMatchObject({ status: 'down', accounts: { default: { store: { status: 'down' }, queue: { status: 'up' } } } });
      const ready = (await indicator.isHealthy('payments', { exclude: ['store'] })).payments;
      expect(ready).toMatchObject({ status: 'up', accounts: { default: { queue: { status: 'up' } } } });
      expect(ready.accounts.default).not.toHaveProperty('store');
    } finally {
      await w?.close();
      w = undefined;
      await Promise.all([storeRedis.stop(), queueRedis.stop()]);
    }
  });

  it('refuses check options that would quietly check something else: an unknown check name, a time-out timers cannot wait', async () => {
    w = await healthApp({});
    const indicator = w.app.get(PaymentHealthIndicator);
    const refused = async (options: unknown) => {
      try {
        await indicator.isHealthy('payments', options as never);
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
      return 'accepted';
    };
    // a typo must not leave the credentials unchecked, or the store checked, without a word
    expect(await refused({ include: ['auth'] })).toBe(
      'RangeError: PaymentHealthIndicator.isHealthy: include names "auth", a check no account has (checks: store, authentication)',
    );
    expect(await refused({ exclude: ['stores'] })).toMatch(/^RangeError: .*exclude names "stores"/);
    expect(await refused({ exclude: 'store' })).toMatch(/^TypeError: .*exclude must be an array/);
    expect(await refused({ accounts: 'default' })).toMatch(/^TypeError: .*accounts must be an array/);
    expect(await refused(null)).toMatch(/^TypeError: .*options must be an object/);
    // Node fires a timer of Infinity, NaN or over 2^31 - 1 ms after 1 ms: a healthy store would be down
    for (const timeoutMs of [Infinity, Number.NaN, 2 ** 31, 0, -5, 1.5]) {
      expect([timeoutMs, await refused({ timeoutMs })]).toEqual([timeoutMs, expect.stringMatching(/^RangeError: .*timeoutMs must be a whole number of milliseconds from 1 to 2147483647$/)]);
    }
    expect(await refused({ include: ['authentication'], exclude: ['store'], timeoutMs: 2 ** 31 - 1 })).toBe('accepted');
  });

  it('in queue mode with only the queue URL, names that URL (redacted) for the store built on it', async () => {
    const password = 'qu3ue-only-pa55word';
    const port = await unusedLoopbackPort();
    w = await healthApp({ processing: 'queue', queueWorker: false, queueRedisUrl: `redis://:${password}@127.0.0.1:${port}` });
    const down = await getHealth(w);
    expect(down.status).toBe(503);
    expect(down.body.error.payments.accounts.default.store).toMatchObject({ status: 'down', kind: 'redis', url: `redis://:[redacted]@127.0.0.1:${port}` });
    expect(JSON.stringify(down.body)).not.toContain(password);
  });

  describe('authentication (on request) against the simulator', () => {
    let sim: PaymentServiceSimulator;
    beforeAll(async () => {
      sim = new PaymentServiceSimulator();
      await sim.start();
    });
    afterAll(async () => sim?.stop());

    const client = (clientSecret: string) => ({ baseUrl: sim.url, clientId: SANDBOX_CLIENT.clientId, clientSecret });

    it('is up when a token can be obtained, and asks for none while one is cached', async () => {
      w = await healthApp(client(SANDBOX_CLIENT.clientSecret));
      sim.clearRequests();
      for (let i = 0; i < 3; i++) {
        const answer = await getHealth(w, 'health/auth');
        expect(answer.status).toBe(200);
        expect(answer.body.info.payments.accounts.default).toEqual({
          store: { status: 'up', kind: 'memory', latencyMs: expect.any(Number) },
          authentication: { status: 'up', latencyMs: expect.any(Number) },
        });
      }
      expect(sim.requests.filter((r) => r.route === '/authentication/token')).toHaveLength(1);
    });

    it('is up with configured: false for an account without credentials (webhook-only), asking for no token; an account beside it is checked', async () => {
      // before: down for good, 'clientId and clientSecret ... are required', for a valid setup
      w = await healthApp({ baseUrl: sim.url, readEnv: false }, [PaymentModule.forRoot({ account: 'eu', ...client(SANDBOX_CLIENT.clientSecret), readEnv: false })]);
      sim.clearRequests();
      const answer = await getHealth(w, 'health/auth');
      expect(answer.status).toBe(200);
      expect(answer.body.info.payments.accounts.default.authentication).toEqual({ status: 'up', configured: false, latencyMs: expect.any(Number) });
      expect(answer.body.info.payments.accounts.eu.authentication).toEqual({ status: 'up', latencyMs: expect.any(Number) });
      expect(sim.requests.filter((r) => r.route === '/authentication/token')).toHaveLength(1);
    });

    it('is down with the code when the credentials are wrong, without the secret; GET /health alone stays up', async () => {
      const wrongSecret = 'definitely-not-the-sandbox-secret';
      w = await healthApp(client(wrongSecret));
      expect((await getHealth(w)).status).toBe(200);
      const down = await getHealth(w, 'health/auth');
      expect(down.status).toBe(503);
      expect(down.body.error.payments.reason).toMatch(/^default\/authentication: /);
      expect(down.body.error.payments.accounts.default.authentication).toEqual({ status: 'down', code: 'PAY_1004', reason: expect.any(String) });
      expect(JSON.stringify(down.body)).not.toContain(wrongSecret);
    });

    it('a failing check asks for one token without retries, then says the same for 30 s: probes leave the token limit to the app', async () => {
      // before: each probe made up to four token calls, the limit (10 a minute) ran out, later
      // probes timed out instead of naming the cause, and the app's own payments waited for a slot
      w = await healthApp(client(SANDBOX_CLIENT.clientSecret));
      sim.clearRequests();
      sim.injectFault({ path: '/authentication/token', kind: 'status', status: 503, times: 100 });
      try {
        for (let i = 0; i < 12; i++) {
          const down = await getHealth(w, 'health/auth');
          expect(down.status).toBe(503);
          expect(down.body.error.payments.accounts.default.authentication).toMatchObject({ status: 'down', code: 'SERVICE_UNAVAILABLE' });
        }
        expect(sim.requests.filter((r) => r.route === '/authentication/token')).toHaveLength(1);
      } finally {
        sim.clearFaults();
      }
      // the app's own call is not held up by the probes: the token limit still has room
      const started = Date.now();
      await w.app.get(PaymentGatewayService).listGateways();
      expect(Date.now() - started).toBeLessThan(2_000);
      // and the token it got ends the held failure at once
      expect((await getHealth(w, 'health/auth')).status).toBe(200);
    });

    it("the held failure stays ended after the app's token is no longer reused: the next check asks for a token", async () => {
      w = await healthApp({ ...client(SANDBOX_CLIENT.clientSecret), tokenResponse: { maxExpiresInSeconds: 2, refreshMarginSeconds: 0 } });
      sim.injectFault({ path: '/authentication/token', kind: 'status', status: 503, times: 1 });
      expect((await getHealth(w, 'health/auth')).status).toBe(503);
      await w.app.get(PaymentGatewayService).listGateways(); // the app got a token: the service works
      expect((await getHealth(w, 'health/auth')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2_300)); // that token is past its reuse
      sim.clearRequests();
      // was 503 SERVICE_UNAVAILABLE, the old failure answered again without a call, for the rest of its hold
      expect((await getHealth(w, 'health/auth')).status).toBe(200);
      expect(sim.requests.filter((r) => r.route === '/authentication/token')).toHaveLength(1);
    });

    it("a check and an app call that both need a token share the check's request", async () => {
      w = await healthApp(client(SANDBOX_CLIENT.clientSecret));
      sim.clearRequests();
      // the check's token request is on its way (its answer slowed down) when the app's call needs one
      sim.injectFault({ path: '/authentication/token', kind: 'trickle', trickleMs: 500 });
      const health = getHealth(w, 'health/auth');
      await waitFor('the check asked for a token', () => sim.requests.some((r) => r.route === '/authentication/token'));
      await w.app.get(PaymentGatewayService).listGateways();
      expect((await health).status).toBe(200);
      expect(sim.requests.filter((r) => r.route === '/authentication/token')).toHaveLength(1);
    });
  });
});
