// Benchmark 1: the module's webhook route (signature + memory-store dedup + one no-op
// @OnPaymentEvent handler) against a bare JSON route of the same app, with autocannon; the
// "floor" route (HMAC, parse, a Set, the handler, in one controller method) shows what
// doing this job inside Nest costs at the least.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';

import { BENCH_WEBHOOK_SECRET, type BenchRow, fmt, forkBenchApp, median, rotate } from './bench-util.js';

export interface ThroughputSettings {
  connections: number;
  roundSeconds: number;
  pairs: number;
  warmupSeconds: number;
}

export interface Round {
  rps: number;
  /** App-process user CPU time per answered request, in µs: capacity, insensitive to the load generator. */
  cpuPerRequest: number;
  /** Young-generation GCs (scavenges) of the app per 1,000 answered requests, and their mean pause in ms. */
  youngGcsPer1000?: number;
  youngGcPauseMs?: number;
  p99: number;
  non2xx: number;
  errors: number;
  total2xx: number;
}

let sequence = 0;

/** A fresh, signed, unique event per request: the module route never sees a duplicate. */
export function signedEvent(): { body: string; signature: string } {
  sequence++;
  const body = JSON.stringify({
    eventId: `evt_bench_${process.pid}_${sequence}`,
    eventType: 'payment.succeeded',
    apiVersion: '2024-01-15',
    createdAt: new Date().toISOString(),
    environment: 'sandbox',
    data: {
      trxId: `trx_bench_${sequence}`,
      token: `tok_bench_${sequence}`,
      amount: '10.00000000',
      currency: 'USD',
      status: 'SUCCESS',
      custom: `order-${sequence}`,
      merchantId: 1,
    },
  });
  return { body, signature: createWebhookSignatureHeader(body, BENCH_WEBHOOK_SECRET) };
}

export async function load(url: string, path: string, seconds: number, connections: number): Promise<Round> {
  // Both routes get the same client-side work (new body + signature per request).
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path,
        setupRequest: (request) => {
          const event = signedEvent();
          return {
            ...request,
            method: 'POST',
            path,
            body: event.body,
            headers: { 'content-type': 'application/json', 'x-service-signature': event.signature },
          };
        },
      },
    ],
  });
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total2xx: result['2xx'],
    cpuPerRequest: Number.NaN,
  };
}

/** `BENCH_CPU_PROF=<dir>` profiles the app process (`--cpu-prof`); the profile is written when it stops. */
const profileDir = process.env.BENCH_CPU_PROF;

function startApp(adapter: string, otelSdk: boolean): Promise<{ child: ChildProcess; url: string }> {
  const execArgv = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=webhook-${adapter}.cpuprofile`] : [];
  // BENCH_OTEL=sdk makes the app register the OpenTelemetry SDK with in-memory exporters (bench-otel-sdk.ts)
  const env = { ...process.env, BENCH_OTEL: otelSdk ? 'sdk' : '' };
  return forkBenchApp(join(__dirname, 'webhook-bench-app.js'), [adapter], { execArgv, env }) as Promise<{ child: ChildProcess; url: string }>;
}

interface AppStats {
  handled: number;
  cpuMicros: number;
  youngGcs?: number;
  youngGcMs?: number;
}

function appStats(child: ChildProcess): Promise<AppStats> {
  return new Promise((resolve) => {
    child.once('message', (m: AppStats) => resolve(m));
    child.send({ type: 'stats' });
  });
}

async function measured(child: ChildProcess, url: string, path: string, s: ThroughputSettings): Promise<Round> {
  const before = await appStats(child);
  const round = await load(url, path, s.roundSeconds, s.connections);
  const after = await appStats(child);
  const answered = Math.max(1, round.total2xx + round.non2xx);
  round.cpuPerRequest = (after.cpuMicros - before.cpuMicros) / answered;
  if (after.youngGcs !== undefined && before.youngGcs !== undefined) {
    const gcs = after.youngGcs - before.youngGcs;
    round.youngGcsPer1000 = (1000 * gcs) / answered;
    round.youngGcPauseMs = gcs > 0 ? (after.youngGcMs! - before.youngGcMs!) / gcs : 0;
  }
  return round;
}

/** Throughput target of the module route against the bare route, per adapter. */
const TARGETS = { express: 0.82, fastify: 0.6 } as const;

/**
 * Benchmark 1 (and, with `otelSdk`, benchmark 6: the same app with the OpenTelemetry SDK
 * registered, whose cost is reported rather than held to a target).
 */
export async function webhookThroughput(
  adapter: 'express' | 'fastify',
  s: ThroughputSettings,
  { otelSdk = false, reportedAs }: { otelSdk?: boolean; reportedAs?: string } = {},
): Promise<BenchRow[]> {
  const { child, url } = await startApp(adapter, otelSdk);
  try {
    const paths = ['/payments/webhook', '/floor', '/bare'];
    for (const path of paths) await load(url, path, s.warmupSeconds, s.connections);
    const handledBefore = (await appStats(child)).handled;
    const [module, floor, bare] = (await rotate(
      s.pairs,
      paths.map((path) => () => measured(child, url, path, s)),
    )) as [Round[], Round[], Round[]];
    const handled = (await appStats(child)).handled - handledBefore;
    const module2xx = module.reduce((n, r) => n + r.total2xx, 0);
    const failures = [...module, ...floor, ...bare].reduce((n, r) => n + r.non2xx + r.errors, 0);
    const ratio = (a: Round[], b: Round[]) => median(a.map((r, i) => r.rps / b[i]!.rps));
    const moduleRatio = ratio(module, bare);
    const floorRatio = ratio(floor, bare);
    const rps = (rounds: Round[]) => fmt(median(rounds.map((r) => r.rps)));
    const cpu = (rounds: Round[]) => fmt(median(rounds.map((r) => r.cpuPerRequest)));
    const gc = (rounds: Round[]) =>
      `${fmt(median(rounds.map((r) => r.youngGcsPer1000 ?? Number.NaN)), 2)} × ${fmt(median(rounds.map((r) => r.youngGcPauseMs ?? Number.NaN)), 2)} ms`;
    const moduleP99 = median(module.map((r) => r.p99));
    const floorP99 = median(floor.map((r) => r.p99));
    const bareP99 = median(bare.map((r) => r.p99));
    // autocannon stops with up to `connections` requests in flight per round: handled by
    // the app but not counted as 2xx, hence the slack.
    const inFlightSlack = s.connections * s.pairs;
    const consistent = handled >= module2xx && handled - module2xx <= inFlightSlack;
    const check = failures === 0 && consistent ? '' : ` (non-2xx/errors ${failures}, handler runs ${handled} for ${module2xx} 2xx)`;
    const target = TARGETS[adapter];
    const measuredText =
      `module ${rps(module)} vs bare ${rps(bare)} req/s (floor ${rps(floor)}: ${floorRatio.toFixed(3)} of bare), ` +
      `${s.connections} conns; app user CPU/request module ${cpu(module)}, floor ${cpu(floor)}, bare ${cpu(bare)} µs${check}`;
    if (reportedAs !== undefined) {
      return [{ benchmark: reportedAs, measured: measuredText, figure: moduleRatio.toFixed(3), target: 'reported', pass: check === '' }];
    }
    if (otelSdk) {
      return [
        {
          benchmark: `6. webhook req/s with the OTel SDK, ${adapter}`,
          measured: measuredText,
          figure: moduleRatio.toFixed(3),
          target: 'reported (cost vs row 1)',
          pass: check === '',
        },
      ];
    }
    return [
      {
        benchmark: `1. webhook req/s, ${adapter}`,
        measured: measuredText,
        figure: moduleRatio.toFixed(3),
        target: `≥ ${target.toFixed(2)}`,
        pass: moduleRatio >= target && check === '',
      },
      {
        benchmark: `1. webhook p99, ${adapter}`,
        // With `connections` requests in flight, each scavenge delays that many requests: when
        // they are more than 1 % of all, the p99 is a GC pause (reported per 1,000 requests).
        measured:
          `module ${fmt(moduleP99, 2)} ms vs bare ${fmt(bareP99, 2)} ms (floor ${fmt(floorP99, 2)} ms); ` +
          `young-generation GCs per 1,000 requests × mean pause: module ${gc(module)}, floor ${gc(floor)}, bare ${gc(bare)}`,
        figure: `${moduleP99 - bareP99 >= 0 ? '+' : '−'}${Math.abs(moduleP99 - bareP99).toFixed(2)} ms`,
        target: '≤ +1 ms',
        pass: moduleP99 - bareP99 <= 1,
      },
    ];
  } finally {
    if (profileDir) {
      await new Promise((resolve) => {
        child.once('exit', resolve);
        child.send({ type: 'stop' });
      });
    } else {
      child.kill('SIGKILL');
    }
  }
}
