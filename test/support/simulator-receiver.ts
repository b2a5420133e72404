import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One webhook request a {@link WebhookReceiver} got. */
export interface ReceivedWebhook {
  headers: IncomingMessage['headers'];
  raw: string;
  body: any;
}

/**
 * A bare loopback HTTP endpoint for simulator delivery tests: records every request
 * and answers with the status `respond` returns (200 by default), or never answers
 * when it returns `'stall'`.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  respond: (hook: ReceivedWebhook, index: number) => number | 'stall' = () => 200;
  private server?: Server;
  private readonly stalled = new Set<ServerResponse>();

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(raw);
        } catch {
          body = undefined;
        }
        const hook = { headers: req.headers, raw, body };
        this.received.push(hook);
        const answer = this.respond(hook, this.received.length - 1);
        if (answer === 'stall') {
          this.stalled.add(res);
          return;
        }
        res.writeHead(answer, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const addr = this.server.address() as { port: number };
    return `http://127.0.0.1:${addr.port}/webhook`;
  }

  /** Event types received, in arrival order. */
  get types(): string[] {
    return this.received.map((r) => r.body?.eventType);
  }

  async stop(): Promise<void> {
    for (const r of this.stalled) r.destroy();
    const server = this.server;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}
