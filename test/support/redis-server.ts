// Starts a real `redis-server` for tests (Debian package `redis-server`). A
// missing binary is an error, never a skip: CI installs it (.ci/run).
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { unusedLoopbackPort } from './loopback-port.js';

export interface TestRedisServer {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Stops the server (its data is kept only with `appendOnly`). Safe to call twice. */
  stop(): Promise<void>;
  /** Starts it again on the same port after `stop()`: empty, or with its data when started with `appendOnly`. */
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and take commands, nothing is answered (a hung or partitioned Redis). */
  pause(): void;
  /** Lets a paused server run again (SIGCONT): it answers what it was sent meanwhile. */
  resume(): void;
}

export interface TestRedisServerOptions {
  /**
   * Persist every write to an append-only file (`appendfsync always`) kept across
   * `stop()`/`restart()`, so a restarted server has its data back. @default false
   */
  appendOnly?: boolean;
  /** Clients must `AUTH` with this password (`requirepass`); `url` stays without it. */
  requirePass?: string;
  /** `maxmemory-policy` (Redis' default: `noeviction`). */
  maxmemoryPolicy?: string;
}

const READY_TIMEOUT_MS = 15_000;

// Servers a test forgot to stop must not outlive the test process.
const running = new Set<ChildProcess>();
// Data dirs of append-only servers outlive stop() (restart reads them back).
const persistentDirs = new Set<string>();
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
  for (const dir of persistentDirs) rmSync(dir, { recursive: true, force: true });
});

function findRedisServerBinary(): string {
  const candidates = [
    process.env.REDIS_SERVER_BIN,
    ...(process.env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'redis-server')),
    '/usr/bin/redis-server',
    '/usr/sbin/redis-server',
    '/usr/local/bin/redis-server',
  ].filter((p): p is string => Boolean(p));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // try the next one
    }
  }
  throw new Error(
    'redis-server binary not found. The Redis store tests need a real Redis: install it with ' +
      '`apt-get install -y redis-server` (Debian/Ubuntu; .ci/run does this) or set REDIS_SERVER_BIN.',
  );
}

/** Resolves when the server answers PING with +PONG (after AUTH when it has a password). */
function ping(port: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.once('error', () => finish(false));
    const auth = password === undefined ? '' : `AUTH ${password}\r\n`;
    socket.once('connect', () => socket.write(`${auth}PING\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      const pong = password === undefined ? reply : reply.slice(reply.indexOf('\r\n') + 2);
      if (reply.startsWith('-')) finish(false);
      else if (pong.includes('\r\n')) finish(pong.startsWith('+PONG'));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startRedisServer(options: TestRedisServerOptions = {}): Promise<TestRedisServer> {
  const binary = findRedisServerBinary();
  let port = await unusedLoopbackPort();
  const persistentDir = options.appendOnly ? mkdtempSync(join(tmpdir(), 'pg-redis-aof-')) : undefined;
  if (persistentDir) persistentDirs.add(persistentDir);
  let dir: string | undefined;
  let child: ChildProcess | undefined;
  let output = '';

  const launch = async (): Promise<void> => {
    output = '';
    // a fresh scratch dir per run, removed on stop (nothing is persisted), unless append-only
    dir = persistentDir ?? mkdtempSync(join(tmpdir(), 'pg-redis-'));
    const proc = spawn(
      binary,
      [
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--save', '',
        ...(persistentDir ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
        '--dir', dir,
        '--daemonize', 'no',
        '--loglevel', 'warning',
        ...(options.requirePass === undefined ? [] : ['--requirepass', options.requirePass]),
        ...(options.maxmemoryPolicy === undefined ? [] : ['--maxmemory-policy', options.maxmemoryPolicy]),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    running.add(proc);
    proc.stdout?.on('data', (chunk) => (output += chunk));
    proc.stderr?.on('data', (chunk) => (output += chunk));
    let exited = false;
    proc.once('exit', () => {
      exited = true;
      running.delete(proc);
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`redis-server exited at start on port ${port}:\n${output}`);
      if (await ping(port, options.requirePass)) return;
      await sleep(50);
    }
    proc.kill('SIGKILL');
    throw new Error(`redis-server did not answer PING on port ${port} within ${READY_TIMEOUT_MS} ms:\n${output}`);
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => proc.kill('SIGKILL'), 5000);
        proc.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        proc.kill('SIGCONT'); // a paused server would not act on SIGTERM
        proc.kill('SIGTERM');
      });
    }
    if (dir && dir !== persistentDir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  };

  /** `launch`, tried again (after `beforeRetry`) while another socket holds the port. */
  const launchWhilePortTaken = async (attempts: number, beforeRetry: () => Promise<unknown>): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        await launch();
        return;
      } catch (error) {
        if (attempt === attempts || !output.includes('Address already in use')) throw error;
        if (dir && dir !== persistentDir) rmSync(dir, { recursive: true, force: true });
        await beforeRetry();
      }
    }
  };

  // the port was free when picked; another socket may take it before redis-server binds it
  await launchWhilePortTaken(3, async () => (port = await unusedLoopbackPort()));
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await stop();
    },
    restart: async () => {
      await stop();
      // the same port (clients reconnect to it): while it was free an outgoing socket may have
      // been given it as its local port; such a socket is usually short-lived
      await launchWhilePortTaken(10, () => sleep(200));
    },
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
  };
}
