// A test app in its own Node process: the project's TypeScript run through the suite's
// loader (no build step). Used where a package cannot load inside jest's ESM sandbox
// (e.g. a CommonJS dependency that require()s NestJS 12's ES modules, which plain Node
// 20.19+ does natively).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = process.cwd();

export interface ChildApp {
  url: string;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Starts `fixture` (a .ts path relative to the repo root) with `env`; resolves once it printed `READY <port>`. */
export async function startChildApp(fixture: string, env: Record<string, string>, timeoutMs = 60_000): Promise<ChildApp> {
  const proc = spawn(process.execPath, ['--import', join(ROOT, 'test/support/reliability-ts-register.mjs'), join(ROOT, fixture)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, NODE_OPTIONS: '', ...env },
  });
  let out = '';
  proc.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const port = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${fixture} did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = (): void => {
      const match = /READY (\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    proc.stdout!.on('data', check);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${fixture} exited (${code}) before it was ready:\n${out}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    proc,
    output: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}
