import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(process.cwd());

/**
 * A private copy of the package for the sample tests: the lib built into `<stage>/dist`
 * and the sample compiled in `<stage>/sample`, beside the repo's package.json. So the
 * sample resolves 'nestjs-payment-gateway' through package self-reference exactly as in
 * the repo, without touching the repo's dist/ (other tests and engineers use it).
 */
export interface SampleStage {
  dir: string;
  cleanup(): Promise<void>;
}

export async function buildSampleStage(): Promise<SampleStage> {
  const dir = await mkdtemp(join(tmpdir(), 'sample-stage-'));
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await copyFile(join(REPO_ROOT, 'package.json'), join(dir, 'package.json'));
  await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await run(process.execPath, [tsc, '-p', join(REPO_ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist')], REPO_ROOT);
  await mkdir(join(dir, 'sample'), { recursive: true });
  await cp(join(REPO_ROOT, 'sample', 'src'), join(dir, 'sample', 'src'), { recursive: true });
  await copyFile(join(REPO_ROOT, 'sample', 'tsconfig.json'), join(dir, 'sample', 'tsconfig.json'));
  // Compiled where the staged package.json is: the name resolves to the staged dist/ (types and code).
  await run(process.execPath, [tsc, '-p', join(dir, 'sample', 'tsconfig.json')], dir);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Environment for a child Node process: the test runner's ESM flag and any PAYMENT_* of the shell removed. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k === 'NODE_OPTIONS' || k.startsWith('PAYMENT_') || k.startsWith('SHOP_')) continue;
    env[k] = v;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}

export function run(cmd: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    execFile(cmd, args, { cwd, maxBuffer: 16 * 1024 * 1024, env: childEnv({}) }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${cmd} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`));
      else resolvePromise({ stdout, stderr });
    });
  });
}

/** Runs a script to its end; resolves with exit code and output whatever the code. */
export function runToExit(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    execFile(process.execPath, [script], { cwd, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** The sample shop (`sample/dist/main.js`) running as a child process. */
export interface ShopProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export async function startShop(stageDir: string, env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<ShopProcess> {
  const child = spawn(process.execPath, [join(stageDir, 'sample', 'dist', 'main.js')], { cwd: stageDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = await new Promise<string>((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`shop did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = (): void => {
      const m = /Shop listening on (http:\/\/\S+?)\s/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[1].replace('[::1]', '127.0.0.1'));
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`shop exited with ${code} before listening:\n${out}`));
    });
  });
  return {
    url,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs one read-only query on the shop's SQLite file in a separate Node process (the native addon stays out of the test VM). */
export async function queryShopDb<T = Record<string, unknown>>(dbPath: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1], { readonly: true, fileMustExist: true });
    const rows = db.prepare(process.argv[2]).all(...JSON.parse(process.argv[3]));
    db.close();
    process.stdout.write(JSON.stringify(rows));`;
  const { stdout } = await new Promise<{ stdout: string }>((resolvePromise, reject) => {
    execFile(process.execPath, ['-e', script, dbPath, sql, JSON.stringify(params)], { cwd: REPO_ROOT, env: childEnv({}) }, (error, out, err) => {
      if (error) reject(new Error(`query failed: ${error.message}\n${err}`));
      else resolvePromise({ stdout: out });
    });
  });
  return JSON.parse(stdout) as T[];
}
