import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One canned answer: JSON `body` with `status` (default 200). */
export interface StubAnswer {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Answer this long after the request was read (a slow service). */
  delayMs?: number;
  /** Answer only once this settles: the test decides how long the request stays on the wire. */
  hold?: Promise<unknown>;
  /** Send the status line, the headers and half the body, then reset the connection. */
  cutBody?: boolean;
  /** Send this text as the body (`text/html`) instead of `body` as JSON: a proxy's or firewall's page. */
  html?: string;
  /** With `html`: the page's media type instead of `text/html`; `null` sends none. */
  contentType?: string | null;
}

export interface StubRequest {
  method: string;
  /** Path after `/sandbox/api/v1`. */
  route: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  body: unknown;
}

const BASE = '/sandbox/api/v1';

/**
 * A payment service on loopback that answers canned JSON, for answer shapes the simulator
 * does not produce (snake_case ids, records without an id, a 202 status read, other
 * gateway list shapes). The token route answers a fresh token unless told otherwise;
 * any route without an answer gets a 404 in the service's error envelope.
 */
export class ClientStubServer {
  readonly requests: StubRequest[] = [];
  /** Every bearer token the stub issued. */
  readonly issuedTokens: string[] = [];
  private readonly answers = new Map<string, StubAnswer[]>();
  private server: Server | undefined;
  url = '';

  /** Queues answers for `METHOD route`; the last one keeps being given once the others are used. */
  answer(method: string, route: string, ...answers: StubAnswer[]): this {
    this.answers.set(`${method.toUpperCase()} ${route}`, answers);
    return this;
  }

  calls(route: string, method?: string): StubRequest[] {
    return this.requests.filter((r) => r.route === route && (!method || r.method === method));
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://stub.invalid');
    const route = url.pathname.startsWith(BASE) ? url.pathname.slice(BASE.length) : url.pathname;
    const method = (req.method ?? 'GET').toUpperCase();
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    this.requests.push({ method, route, query: Object.fromEntries(url.searchParams), headers: req.headers, body });

    const queued = this.answers.get(`${method} ${route}`);
    let answer: StubAnswer;
    if (queued && queued.length > 0) answer = queued.length > 1 ? queued.shift()! : queued[0];
    else if (method === 'POST' && route === '/authentication/token') answer = this.tokenAnswer();
    else answer = { status: 404, body: { status: 'error', code: 'NOT_FOUND', message: 'No canned answer', errors: {}, data: [] } };
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    await answer.hold;
    const payload = answer.html ?? JSON.stringify(answer.body);
    const contentType = answer.html === undefined ? 'application/json' : answer.contentType === undefined ? 'text/html' : answer.contentType;
    res.writeHead(answer.status ?? 200, {
      ...(contentType === null ? {} : { 'content-type': contentType }),
      'content-length': Buffer.byteLength(payload),
      ...answer.headers,
    });
    if (answer.cutBody) {
      res.write(payload.slice(0, Math.floor(payload.length / 2)), () => res.socket?.resetAndDestroy());
      return;
    }
    res.end(payload);
  }

  private tokenAnswer(): StubAnswer {
    const token = `stub_${randomBytes(16).toString('hex')}`;
    this.issuedTokens.push(token);
    return { body: { status: 'success', data: { access_token: token, expires_in: 600 } } };
  }
}

/** The service's success envelope around `data`. */
export function success(data: unknown, status = 200): StubAnswer {
  return { status, body: { status: 'success', data } };
}
