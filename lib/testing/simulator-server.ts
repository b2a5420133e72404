import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { clearInterval, setInterval } from 'node:timers';
import type { SimulatorClock } from './simulator.clock.js';
import { BASE_PATHS } from './simulator.constants.js';
import { SimulatorHttpError } from './simulator.errors.js';
import { preemptsHandling, rewrittenAnswer, statusFaultAnswer, type SimulatorFaults } from './simulator-faults.js';
import { errorAnswer, nestsTooDeep, type SimulatorAnswer } from './simulator-request.js';
import type { SimulatorRouter } from './simulator.router.js';
import type { SimulatedMode, SimulatorFault, SimulatorRequestRecord } from './simulator.types.js';

/** A `trickle` fault's answer: one space this often, for `trickleMs` (default 30 s). */
const TRICKLE_INTERVAL_MS = 250;
const DEFAULT_TRICKLE_MS = 30_000;

export interface SimulatorServerOptions {
  host?: string;
  port?: number;
  maxBodyBytes?: number;
}

/**
 * The HTTP side of the simulator: listens on loopback, logs and reads each request,
 * applies the faults the test injected, routes the rest and writes JSON answers.
 */
export class SimulatorServer {
  /** Every request received, in arrival order. */
  readonly requests: SimulatorRequestRecord[] = [];
  private readonly host: string;
  private readonly sockets = new Set<Socket>();
  private readonly stalled = new Set<ServerResponse>();
  private server?: Server;
  private starting?: Promise<void>;
  /** A stop still closing the server: a start waits for it (the port is free only then). */
  private stopping?: Promise<void>;
  /** The port of the first start, taken again by a restart. */
  private firstPort?: number;
  private baseUrl?: string;
  private connections = 0;

  constructor(
    private readonly options: SimulatorServerOptions,
    private readonly clock: SimulatorClock,
    private readonly faults: SimulatorFaults,
    private readonly router: SimulatorRouter,
  ) {
    this.host = options.host ?? '127.0.0.1';
    // A test double holding credentials must not be reachable from the network.
    if (!/^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/.test(this.host)) {
      throw new Error(`PaymentServiceSimulator listens on loopback only (got host ${JSON.stringify(this.host)})`);
    }
  }

  get started(): boolean {
    return this.server !== undefined;
  }

  get url(): string {
    if (!this.baseUrl) throw new Error('PaymentServiceSimulator is not started');
    return this.baseUrl;
  }

  /** TCP connections accepted so far. */
  get connectionCount(): number {
    return this.connections;
  }

  /**
   * Listens (once: concurrent calls share the start). A restart after `stop()` takes the port of
   * the first start again, so an app configured with `url` reaches it ("service down, then back").
   */
  start(): Promise<void> {
    if (this.server) return Promise.resolve();
    this.starting ??= (async () => {
      await this.stopping;
      await this.listen();
    })().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async listen(): Promise<void> {
    const server = createServer((req, res) => {
      this.onRequest(req, res).catch((err: unknown) => {
        // Last resort: a handler bug must not take the simulator down.
        if (!res.headersSent && !res.destroyed) {
          write(res, { status: 500, body: new SimulatorHttpError('INTERNAL_ERROR', String(err)).toEnvelope() });
        }
      });
    });
    server.on('connection', (socket: Socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      // the service's JSON error envelope, as for every other refusal (431: headers over Node's limit)
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
      const error = new SimulatorHttpError(tooLarge ? 'HEADERS_TOO_LARGE' : 'MALFORMED_REQUEST');
      const body = JSON.stringify(error.toEnvelope());
      const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
      socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // `port: 0` (any free port) too takes the first start's port again on a restart
      server.listen(this.options.port || this.firstPort || 0, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const addr = server.address();
    if (!addr || typeof addr === 'string') throw new Error('Simulator did not get a TCP address');
    this.firstPort ??= addr.port;
    this.server = server;
    this.baseUrl = `http://${this.host.includes(':') ? `[${this.host}]` : this.host}:${addr.port}`;
  }

  /** Closes the server and every connection, stalled ones included (after a start still under way). */
  async stop(): Promise<void> {
    // no wait when no start is under way: the server is taken at once, so a start() called
    // right after this (not awaited) listens again instead of finding it still there
    if (this.starting) await this.starting.catch(() => undefined);
    const server = this.server;
    this.server = undefined;
    if (!server) return this.stopping;
    for (const res of this.stalled) res.destroy();
    this.stalled.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    const stopping = closed.finally(() => {
      if (this.stopping === stopping) this.stopping = undefined;
    });
    this.stopping = stopping;
    await stopping;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let parsed: URL;
    try {
      // origin-form paths are appended, not resolved: `//sandbox/...` must not make `sandbox` the host
      const target = req.url ?? '/';
      parsed = new URL(target.startsWith('/') ? `http://simulator.invalid${target}` : target, 'http://simulator.invalid');
    } catch {
      parsed = new URL('http://simulator.invalid/');
    }
    const { mode, route } = splitBasePath(parsed.pathname);
    const method = (req.method ?? 'GET').toUpperCase();
    const record: SimulatorRequestRecord = {
      method,
      path: parsed.pathname,
      route,
      mode,
      query: Object.fromEntries(parsed.searchParams),
      headers: { ...req.headers },
      body: undefined,
      status: 0,
      at: this.clock.now(),
    };
    this.requests.push(record);

    const raw = await readBody(req, this.options.maxBodyBytes ?? 1_048_576);
    if (raw === 'too-large') {
      record.code = 'PAYLOAD_TOO_LARGE';
      this.answer(res, record, errorAnswer(new SimulatorHttpError('PAYLOAD_TOO_LARGE')), true);
      return;
    }
    if (raw === 'aborted') return;
    record.body = describeBody(raw);

    this.router.catchUp();
    const fault = this.faults.take(method, route, parsed.pathname, mode);
    if (fault && preemptsHandling(fault)) {
      this.applyFault(res, record, fault);
      return;
    }
    let answer: SimulatorAnswer;
    try {
      if (!mode) throw new SimulatorHttpError('NOT_FOUND');
      answer = this.router.route({ method, route, mode, query: record.query, headers: req.headers, raw, ip: req.socket.remoteAddress ?? '' });
    } catch (err) {
      answer = errorAnswer(err);
    }
    if (fault) {
      this.applyFault(res, record, fault, answer);
      return;
    }
    this.answer(res, record, answer);
  }

  /** `handled` is the real answer when the request was handled before the fault. */
  private applyFault(res: ServerResponse, record: SimulatorRequestRecord, fault: SimulatorFault, handled?: SimulatorAnswer): void {
    record.fault = fault.kind;
    if (fault.kind === 'rewrite') {
      // a copy: the rewrite must not change the request log
      this.answer(res, record, rewrittenAnswer(fault, handled!, structuredClone(record)));
      return;
    }
    if (fault.kind === 'reset') {
      const socket = res.socket;
      if (socket && typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
      else socket?.destroy();
      return;
    }
    if (fault.kind === 'stall') {
      // Never answered; stop() destroys it.
      this.hold(res);
      return;
    }
    if (fault.kind === 'trickle') {
      this.trickle(res, record, handled!, fault.trickleMs ?? DEFAULT_TRICKLE_MS);
      return;
    }
    this.answer(res, record, statusFaultAnswer(fault));
  }

  /** Keeps an answer open until it ends or `stop()` destroys it. */
  private hold(res: ServerResponse): void {
    this.stalled.add(res);
    res.on('close', () => this.stalled.delete(res));
  }

  /** The handled answer, its body preceded by a space every `TRICKLE_INTERVAL_MS` for `trickleMs`. */
  private trickle(res: ServerResponse, record: SimulatorRequestRecord, answer: SimulatorAnswer, trickleMs: number): void {
    recordAnswer(record, answer);
    const text = JSON.stringify(answer.body);
    let spaces = Math.ceil(trickleMs / TRICKLE_INTERVAL_MS);
    res.writeHead(answer.status, answerHeaders(answer, spaces + Buffer.byteLength(text)));
    this.hold(res);
    const timer = setInterval(() => {
      if (spaces-- > 0) {
        res.write(' ');
        return;
      }
      clearInterval(timer);
      res.end(text);
    }, TRICKLE_INTERVAL_MS);
    res.on('close', () => clearInterval(timer));
  }

  private answer(res: ServerResponse, record: SimulatorRequestRecord, answer: SimulatorAnswer, close = false): void {
    recordAnswer(record, answer);
    write(res, answer, close);
  }
}

function recordAnswer(record: SimulatorRequestRecord, answer: SimulatorAnswer): void {
  record.status = answer.status;
  const body = answer.body as { status?: string; code?: string } | undefined;
  if (body?.status === 'error') record.code = body.code;
}

/** The environment of a path and the route after its base; no mode when no base matches. */
function splitBasePath(pathname: string): { mode?: SimulatedMode; route: string } {
  for (const [base, mode] of BASE_PATHS) {
    if (pathname === base || pathname.startsWith(`${base}/`)) return { mode, route: pathname.slice(base.length) || '/' };
  }
  return { route: pathname };
}

function write(res: ServerResponse, answer: SimulatorAnswer, close = false): void {
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, answerHeaders(answer, Buffer.byteLength(text), close));
  res.end(text);
}

function answerHeaders(answer: SimulatorAnswer, contentLength: number, close = false): Record<string, string | number> {
  return {
    'content-type': 'application/json; charset=utf-8',
    'content-length': contentLength,
    ...(close ? { connection: 'close' } : {}),
    ...answer.headers,
  };
}

/** Parsed JSON, the text when it is not JSON, `undefined` when empty: what the request log shows. */
function describeBody(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  // kept as text: the log's copies (`requests`, a rewrite's record) would overflow the stack
  if (nestsTooDeep(text)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Reads the whole body. Past `limit` bytes it keeps draining without buffering and
 * reports `too-large` at the end, so the client sees a clean 413 instead of a reset.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large' | 'aborted'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (value: Buffer | 'too-large' | 'aborted'): void => {
      if (!done) {
        done = true;
        resolve(value);
      }
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else chunks.length = 0;
    });
    req.on('end', () => finish(size > limit ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', () => finish('aborted'));
    req.on('close', () => finish(req.complete ? (size > limit ? 'too-large' : Buffer.concat(chunks)) : 'aborted'));
  });
}
