// A test app in its own Node process: the project's TypeScript run through the suite's
// loader (no build step). Used where a package cannot load inside jest's ESM sandbox (e.g. a
// CommonJS dependency that require()s NestJS 12's ES modules, which plain Node 20.19+ does
// natively), and where a test kills the process (crash and takeover tests).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = process.cwd();

// Children a test forgot, or one that failed to start, must not outlive the test process.
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

export interface ChildApp {
  /** `http://127.0.0.1:<port>` when the child printed `READY <port>`; undefined for `READY` alone. */
  url?: string;
  proc: ChildProcess;
  output(): string;
  /** SIGTERM (a graceful close); resolves once the process exited. */
  stop(): Promise<void>;
  /** SIGKILL (a crash); resolves once the process exited. */
  kill(): Promise<void>;
}

/**
 * Starts `fixture` (a .ts path relative to the repo root) with `env` (and PATH; no inherited
 * NODE_OPTIONS); resolves once it printed the line `READY` or `READY <port>`. A child that exits or
 * does not get ready within `timeoutMs` is killed and the promise rejects with its output.
 * `cwd` is the child's working directory (where optional peers are looked for, among others).
 * The default time-out stays below jest's 30 s per test.
 */
export async function startChildApp(fixture: string, env: Record<string, string>, timeoutMs = 25_000, cwd = ROOT): Promise<ChildApp> {
  const proc = spawn(process.execPath, ['--import', join(ROOT, 'test/support/reliability-ts-register.mjs'), join(ROOT, fixture)], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, NODE_OPTIONS: '', ...env },
  });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  let out = '';
  proc.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const ended = (): boolean => proc.exitCode !== null || proc.signalCode !== null;
  const signal = (name: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (ended()) return resolve();
      proc.once('exit', () => resolve());
      proc.kill(name);
    });
  try {
    const port = await new Promise<string | undefined>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${fixture} did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
      proc.stdout!.on('data', () => {
        const match = /READY(?: (\d+))?\n/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${fixture} exited (${code}) before it was ready:\n${out}`));
      });
    });
    return {
      url: port === undefined ? undefined : `http://127.0.0.1:${port}`,
      proc,
      output: () => out,
      stop: () => signal('SIGTERM'),
      kill: () => signal('SIGKILL'),
    };
  } catch (error) {
    await signal('SIGKILL');
    throw error;
  }
}
