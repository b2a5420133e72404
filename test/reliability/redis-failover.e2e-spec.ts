import 'reflect-metadata';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { sleep, waitFor } from '../support/wait.js';
import { envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

/**
 * One Redis endpoint (a DNS name, a load balancer: managed Redis) in front of a primary and its
 * replica. A failover promotes the replica, demotes the primary to a read-only replica of it and
 * points the endpoint at the new primary: connections made before it still reach the old one,
 * and every write they send is refused `READONLY`. Only a new connection reaches the primary.
 */
class FailoverEndpoint {
  private server!: Server;
  private readonly sockets = new Set<Socket>();
  private target: number;
  port = 0;

  constructor(
    private readonly primary: TestRedisServer,
    private readonly replica: TestRedisServer,
  ) {
    this.target = primary.port;
  }

  async start(): Promise<void> {
    // the first sync at once (Redis waits 5 s for more replicas by default)
    for (const server of [this.primary, this.replica]) await this.admin(server, (r) => r.config('SET', 'repl-diskless-sync-delay', '0'));
    await this.admin(this.replica, (r) => r.call('REPLICAOF', '127.0.0.1', String(this.primary.port)));
    this.server = createServer((client) => {
      const upstream = connect(this.target, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Once the replica has every write: it becomes the primary, the old primary its replica, and new connections reach it. */
  async failOver(): Promise<void> {
    await this.admin(this.primary, async (r) => expect(await r.call('WAIT', '1', '5000')).toBe(1));
    await this.admin(this.replica, (r) => r.call('REPLICAOF', 'NO', 'ONE'));
    await this.admin(this.primary, (r) => r.call('REPLICAOF', '127.0.0.1', String(this.replica.port)));
    this.target = this.replica.port;
  }

  private async admin(server: TestRedisServer, command: (r: Redis) => Promise<unknown>): Promise<void> {
    const r = new Redis(server.url);
    try {
      await command(r);
    } finally {
      r.disconnect();
    }
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('reliability: a Redis failover behind one endpoint', () => {
  let first: TestRedisServer;
  let second: TestRedisServer;
  let endpoint: FailoverEndpoint;
  let w: WebhookApp | undefined;

  beforeEach(async () => {
    [first, second] = await Promise.all([startRedisServer(), startRedisServer()]);
    endpoint = new FailoverEndpoint(first, second);
    await endpoint.start();
  });
  afterEach(async () => {
    await w?.close();
    w = undefined;
    await endpoint.stop();
    await Promise.all([first.stop(), second.stop()]);
  });

  /** Deliveries of new events, one every 200 ms, until one is answered `expected`; the statuses seen. */
  async function deliverUntil(expected: Record<string, unknown>, timeoutMs = 10_000): Promise<{ statuses: number[]; eventId?: string }> {
    const statuses: number[] = [];
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const event = envelope();
      const answer = await postWebhook(w!.url, event);
      statuses.push(answer.status);
      if (JSON.stringify(answer.json) === JSON.stringify(expected)) return { statuses, eventId: event.eventId as string };
      await sleep(200);
    }
    return { statuses };
  }

  it('inline mode, Redis store: the connection to the demoted primary is replaced, deliveries are handled again within a second or two', async () => {
    w = await startWebhookApp({ adapter: 'express', payment: { redisUrl: endpoint.url } });
    expect((await postWebhook(w.url, envelope())).json).toEqual({ received: true });
    await endpoint.failOver();
    const { statuses, eventId } = await deliverUntil({ received: true });
    // before: 503 READONLY for every delivery until the app restarted
    expect(eventId).toBeDefined();
    expect(statuses.length).toBeLessThanOrEqual(5);
    expect(w.handlers.count('payment.*', eventId)).toBe(1);
  });

  it('queue mode: the route queues on the new primary and the worker runs the event there', async () => {
    w = await startWebhookApp({ adapter: 'express', payment: { processing: 'queue', queueRedisUrl: endpoint.url, queueBackoffMs: 100 } });
    const before = envelope();
    expect((await postWebhook(w.url, before)).json).toEqual({ received: true, queued: true });
    await waitFor('the worker ran the event queued before the failover', () => w!.handlers.count('payment.*', before.eventId as string) === 1);
    await endpoint.failOver();
    const { statuses, eventId } = await deliverUntil({ received: true, queued: true });
    expect(eventId).toBeDefined();
    expect(statuses.length).toBeLessThanOrEqual(5);
    // the worker's own connections (its blocking wait for jobs included) reach the new primary too
    await waitFor('the worker ran the event queued after the failover', () => w!.handlers.count('payment.*', eventId) === 1, 15_000);
  });
});
