// A claim whose answer never came because the connection to Redis broke under it (a network
// blip, a load balancer that keeps accepting connections while Redis is gone). The delivery is
// answered 503, and once Redis is back the service's retry must run the event: the claim's
// release, which found the connection down, is sent once it is back (behind the claim itself,
// which ioredis sends again on the reconnect).
import 'reflect-metadata';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

/**
 * A TCP endpoint in front of Redis: `forward`; `silent` (nothing reaches Redis); `deaf` (requests
 * reach Redis, its answers are dropped); `refuse` (connections accepted and closed at once).
 */
class OutageEndpoint {
  mode: 'forward' | 'silent' | 'deaf' | 'refuse' = 'forward';
  port = 0;
  private server!: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly redisPort: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      client.on('error', () => undefined);
      if (this.mode === 'refuse') return void client.destroy();
      const upstream = connect(this.redisPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.on('data', (chunk) => this.mode !== 'silent' && upstream.write(chunk));
      upstream.on('data', (chunk) => this.mode !== 'deaf' && client.write(chunk));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Breaks every open connection. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('Redis store: a claim cut off by an outage', () => {
  let redis: TestRedisServer;
  let admin: Redis;
  let endpoint: OutageEndpoint;
  let w: WebhookApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
    endpoint = new OutageEndpoint(redis.port);
    await endpoint.start();
    w = await startWebhookApp({ adapter: 'express', payment: { redisUrl: `redis://127.0.0.1:${endpoint.port}`, redisTimeoutMs: 500 } });
  });
  afterAll(async () => {
    await w?.close();
    await endpoint?.stop();
    admin?.disconnect();
    await redis?.stop();
  });

  it.each([
    ['never reached Redis (ioredis sends it on the reconnect)', 'silent'],
    ['reached Redis, its answer lost', 'deaf'],
  ] as const)('a claim that %s is released once Redis is back, so the retry runs the event', async (_label, mode) => {
    expect((await postWebhook(w.url, envelope())).status).toBe(200);
    const event = envelope();
    endpoint.mode = mode;
    const first = postWebhook(w.url, event);
    await sleep(200);
    // Redis out of reach for a few seconds: the reconnects meet a closed door
    endpoint.mode = 'refuse';
    endpoint.cut();
    expect(await first).toMatchObject({ status: 503, json: { code: 'WEBHOOK_STORE_UNAVAILABLE' } });
    await sleep(3000);
    endpoint.mode = 'forward';
    // back once another event goes through
    await waitFor('the store is back', async () => (await postWebhook(w.url, envelope())).status === 200, 15_000);
    // was 409 WEBHOOK_EVENT_IN_FLIGHT for a whole lease (60 s): the claim held the event for nobody
    expect(await postWebhook(w.url, event)).toMatchObject({ status: 200, json: { received: true } });
    expect(w.handlers.count('payment.*', event.eventId as string)).toBe(1);
  }, 30_000);
});
