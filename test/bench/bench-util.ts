// Shared helpers of `npm run bench`: app processes, interleaved rounds, medians and the results table.
import { type ChildProcess, fork, type ForkOptions } from 'node:child_process';
import { cpus, loadavg } from 'node:os';

/**
 * Forks a bench app and resolves once it printed `READY <port>` (url set) or `READY worker`.
 * One that exits first or is not ready within `timeoutMs` is killed and the bench stops
 * with an error, rather than waiting forever.
 */
export function forkBenchApp(file: string, args: string[], options: ForkOptions, timeoutMs = 60_000): Promise<{ child: ChildProcess; url?: string }> {
  const child = fork(file, args, { ...options, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`${file} was not ready within ${timeoutMs} ms`)), timeoutMs);
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /READY (\S+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      resolve({ child, url: match[1] === 'worker' ? undefined : `http://127.0.0.1:${match[1]}` });
    });
    child.once('exit', (code) => fail(new Error(`${file} exited early (${code})`)));
  });
}

/** One line of the results table. Every figure is a ratio of two things measured in the same run. */
export interface BenchRow {
  benchmark: string;
  /** What was measured, e.g. `module 9,120 req/s vs bare 10,050 req/s`. */
  measured: string;
  /** The figure compared with the target, as printed. */
  figure: string;
  target: string;
  pass: boolean;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Runs `a` and `b` in ABBA order, `pairs` times each, so a slow drift of the machine
 * (other processes starting or stopping) hits both sides equally.
 */
export async function interleave<T>(pairs: number, a: () => Promise<T>, b: () => Promise<T>): Promise<{ a: T[]; b: T[] }> {
  const out = { a: [] as T[], b: [] as T[] };
  for (let i = 0; i < pairs; i++) {
    if (i % 2 === 0) {
      out.a.push(await a());
      out.b.push(await b());
    } else {
      out.b.push(await b());
      out.a.push(await a());
    }
  }
  return out;
}

/**
 * Runs each of `runs` once per round, `rounds` times, rotating which goes first, so a slow
 * drift of the machine hits every side equally. Results are per side, in round order.
 */
export async function rotate<T>(rounds: number, runs: ReadonlyArray<() => Promise<T>>): Promise<T[][]> {
  const out = runs.map(() => [] as T[]);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < runs.length; k++) {
      const side = (round + k) % runs.length;
      out[side]!.push(await runs[side]!());
    }
  }
  return out;
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  // the load average says how shared the machine was: ratios hold up, absolute figures do not
  return `${cpus().length} × ${cpu.trim()}, Node ${process.version}, ${process.platform}/${process.arch}, load average ${loadavg()[0]!.toFixed(1)} at the end of the run`;
}

export function renderTable(rows: readonly BenchRow[]): string {
  const header = ['Benchmark', 'Measured (side by side, medians)', 'Figure', 'Target', 'Result'];
  const body = rows.map((r) => [r.benchmark, r.measured, r.figure, r.target, r.pass ? 'pass' : 'MISS']);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((line) => line[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

export function renderMarkdown(rows: readonly BenchRow[]): string {
  const lines = ['| Benchmark | Measured (side by side, medians) | Figure | Target | Result |', '|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.benchmark} | ${r.measured} | ${r.figure} | ${r.target} | ${r.pass ? 'pass' : '**miss**'} |`);
  return lines.join('\n');
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Webhook secret of the benchmark app (not a real secret). */
export const BENCH_WEBHOOK_SECRET = 'whsec_bench_only';
