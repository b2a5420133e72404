// Helpers of the compatibility matrix: pack the real tarball, install it into throw-away
// apps under os.tmpdir(), run those apps as child processes and talk HTTP to them.
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Output kept per child process: bounded (an install's log can be long), but well above what
 * a command whose stdout is read must print whole (`npm pack --json` lists every packed file:
 * about 65 KB at 140 source files, which a 64 KB cap cut in half).
 */
const OUTPUT_LIMIT = 4 * 1024 * 1024;

/**
 * Environment of every child: the parent's, less what would change how npm or node behave
 * inside the temp apps (jest's --experimental-vm-modules, `npm test`'s npm_* variables,
 * the host's PAYMENT_* settings).
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_OPTIONS' || /^npm_/i.test(key) || key.startsWith('PAYMENT_')) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

function appendCapped(current: string, chunk: Buffer): string {
  const next = current + chunk.toString('utf8');
  return next.length > OUTPUT_LIMIT ? next.slice(next.length - OUTPUT_LIMIT) : next;
}

/** Runs a command to completion; rejects with the tail of its output when it exits non-zero. */
export function run(command: string, args: string[], cwd: string, env = childEnv()): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout = appendCapped(stdout, chunk)));
    child.stderr.on('data', (chunk: Buffer) => (stderr = appendCapped(stderr, chunk)));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) return resolve({ stdout, stderr });
      reject(
        new Error(
          `\`${command} ${args.join(' ')}\` in ${cwd} exited with ${code ?? signal}\n` +
            `--- stdout (tail) ---\n${stdout.slice(-4000)}\n--- stderr (tail) ---\n${stderr.slice(-4000)}`,
        ),
      );
    });
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

export interface PackedTarball {
  tarball: string;
  /** Paths inside the package, as `npm pack --json` lists them. */
  files: string[];
}

/**
 * Builds the package with the repository's build config and packs it with `npm pack`.
 * The build goes to a private staging copy instead of the repo's dist/, so a parallel
 * test or engineer using dist/ never sees it half-written; the staged package has exactly
 * the repo's package.json, so `files` and `exports` are the ones that ship.
 * Returns the absolute path of the .tgz and the paths it contains.
 */
export async function buildAndPack(repoRoot: string, workDir: string): Promise<PackedTarball> {
  const stage = join(workDir, 'package-stage');
  await mkdir(stage, { recursive: true });
  const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const buildConfig = join(repoRoot, 'tsconfig.build.json');
  // what `npm run build` does: the CommonJS build, then the ES module build in dist/esm
  await run(process.execPath, [tsc, '-p', buildConfig, '--outDir', join(stage, 'dist')], repoRoot);
  await run(
    process.execPath,
    [tsc, '-p', buildConfig, '--module', 'es2022', '--moduleResolution', 'bundler', '--outDir', join(stage, 'dist', 'esm')],
    repoRoot,
  );
  await writeFile(join(stage, 'dist', 'esm', 'package.json'), '{ "type": "module" }\n');
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { files?: string[] };
  await copyFile(join(repoRoot, 'package.json'), join(stage, 'package.json'));
  // what `files` lists, plus what npm always packs from the root (README, LICENSE/LICENCE)
  const always = (await readdir(repoRoot)).filter((name) => /^(readme|licen[cs]e)(\..*)?$/i.test(name));
  for (const entry of new Set([...(pkg.files ?? []), ...always])) {
    if (entry === 'dist' || /[*?]/.test(entry)) continue;
    const from = join(repoRoot, entry);
    if (await exists(from)) await cp(from, join(stage, entry), { recursive: true });
  }
  // --ignore-scripts: a prepack build would run in the staging copy, which has no sources
  const { stdout } = await run(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--pack-destination', workDir],
    stage,
  );
  const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  if (!packed?.files.some((f) => f.path === 'dist/index.js')) {
    throw new Error(`npm pack produced a tarball without dist/index.js: ${stdout.slice(0, 2000)}`);
  }
  return { tarball: join(workDir, packed.filename), files: packed.files.map((f) => f.path) };
}

export interface TempAppSpec {
  /** Directory name under the work dir. */
  name: string;
  /** Extra package.json fields (e.g. `type: 'module'`). */
  manifest?: Record<string, unknown>;
  dependencies: Record<string, string>;
  /** File name in the app → absolute source path to copy. */
  files: Record<string, string>;
}

function appManifest(name: string, extra: Record<string, unknown> | undefined, dependencies: object): object {
  return { name: `compat-${name}`, version: '0.0.0', private: true, ...extra, dependencies };
}

/** Writes a temp app and installs its dependencies once (npm cache first). Fails on any install error. */
export async function createAndInstallApp(workDir: string, spec: TempAppSpec): Promise<string> {
  const dir = join(workDir, spec.name);
  await mkdir(dir, { recursive: true });
  const manifest = appManifest(spec.name, spec.manifest, spec.dependencies);
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  for (const [target, source] of Object.entries(spec.files)) await copyFile(source, join(dir, target));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], dir);
  return dir;
}

/**
 * A second app sharing an installed app's node_modules through a symlink (no second
 * install): used for a CommonJS app next to the ESM one of the same Nest major.
 */
export async function createSiblingApp(
  workDir: string,
  installedDir: string,
  spec: Omit<TempAppSpec, 'dependencies'>,
): Promise<string> {
  const dir = join(workDir, spec.name);
  await mkdir(dir, { recursive: true });
  const installed = JSON.parse(await readFile(join(installedDir, 'package.json'), 'utf8')) as { dependencies: object };
  const manifest = appManifest(spec.name, spec.manifest, installed.dependencies);
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  for (const [target, source] of Object.entries(spec.files)) await copyFile(source, join(dir, target));
  await symlink(join(installedDir, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

export interface RunningApp {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The JSON line the app printed when it was listening. */
  ready: Record<string, unknown>;
  /** stdout + stderr so far, for failure messages. */
  output(): string;
  /** stderr alone (warnings, errors). */
  stderr(): string;
  /** SIGTERM (SIGKILL after a grace period); resolves with the exit code or signal. */
  stop(): Promise<ChildExit>;
}

const children = new Set<ChildProcess>();
// apps a failed run forgot must not outlive the test process
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Stops a child: SIGTERM, then SIGKILL if it has not exited after `graceMs`. Resolves with how it ended. */
function stopChild(child: ChildProcess, graceMs = 15_000): Promise<ChildExit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    // a safety net so a hung shutdown cannot hang the suite; never a timing assertion
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal });
    });
    child.kill('SIGTERM');
  });
}

/**
 * Spawns `node <args>` in `cwd` and waits for the JSON line with `port` it prints once
 * listening. Rejects (with its output) if it exits or prints nothing usable first.
 */
export function startNodeApp(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
): Promise<RunningApp> {
  return new Promise((resolve, reject) => {
    const entry = args.join(' ');
    const child = spawn(process.execPath, args, { cwd, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let out = '';
    let errOut = '';
    let pending = '';
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const message = `${entry} in ${cwd}: ${why}\n--- output ---\n${out.slice(-6000)}`;
      void stopChild(child, 5000).then(() => reject(new Error(message)));
    };
    // a safety net for a hung boot, not a timing assertion
    const timer = setTimeout(() => fail(`no ready line after ${readyTimeoutMs} ms`), readyTimeoutMs);
    child.stderr.on('data', (chunk: Buffer) => {
      out = appendCapped(out, chunk);
      errOut = appendCapped(errOut, chunk);
    });
    child.stdout.on('data', (chunk: Buffer) => {
      out = appendCapped(out, chunk);
      if (settled) return;
      pending += chunk.toString('utf8');
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (!line.startsWith('{')) continue;
        let ready: Record<string, unknown>;
        try {
          ready = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        if (typeof ready.port !== 'number') continue;
        settled = true;
        clearTimeout(timer);
        resolve({
          url: `http://127.0.0.1:${ready.port}`,
          ready,
          output: () => out,
          stderr: () => errOut,
          stop: () => stopChild(child),
        });
        return;
      }
    });
    child.on('error', (err) => fail(`spawn failed: ${err.message}`));
    child.on('exit', (code, signal) => fail(`exited with ${code ?? signal} before it was ready`));
  });
}

/** Kills every child still running (afterAll safety net). */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, 5000)));
}

/** The repository root: the nearest folder up from the cwd whose package.json is this package. */
export async function findRepoRoot(packageName = 'nestjs-payment-gateway'): Promise<string> {
  let dir = process.cwd();
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (await exists(manifest)) {
      const { name } = JSON.parse(await readFile(manifest, 'utf8')) as { name?: string };
      if (name === packageName) return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no ${packageName} package.json above ${process.cwd()}`);
    dir = parent;
  }
}

export function makeWorkDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'payment-compat-'));
}

export async function removeWorkDir(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true });
}
