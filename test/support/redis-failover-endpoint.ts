import { createServer, type Server, type Socket } from 'node:net';
import { openRelay } from './tcp-relay.js';
import { Redis } from 'ioredis';
import type { TestRedisServer } from './redis-server.js';

/**
 * One Redis endpoint (a DNS name, a load balancer: managed Redis) in front of a primary and its
 * replica. A failover promotes the replica, demotes the primary to a read-only replica of it and
 * points the endpoint at the new primary: connections made before it still reach the old one,
 * and every write they send is refused `READONLY`. Only a new connection reaches the primary.
 */
export class FailoverEndpoint {
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
      const upstream = openRelay(client, this.target, this.sockets);
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
