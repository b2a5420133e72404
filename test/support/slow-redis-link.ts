import { createServer, type Server, type Socket } from 'node:net';
import { openRelay } from './tcp-relay.js';

/**
 * A TCP relay in front of a Redis server that holds every byte an app sends for `delayMs` (in
 * order) before passing it on: a slow link, or an app whose commands leave late. Replies pass
 * at once. `delayMs` can change while connections are open.
 */
export class SlowRedisLink {
  delayMs = 0;
  port = 0;
  private server!: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly redisPort: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = openRelay(client, this.redisPort, this.sockets);
      client.on('data', (chunk) => {
        if (this.delayMs === 0) upstream.write(chunk);
        else setTimeout(() => upstream.write(chunk), this.delayMs);
      });
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
