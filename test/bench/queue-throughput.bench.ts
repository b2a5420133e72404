// Benchmark 5: queue mode. (a) The webhook route of a web-only instance (signature, envelope,
// processed-check, job added to Redis) against a bare JSON route of the same app, and the "floor"
// (the least a controller can do to queue a signed event on BullMQ: what Redis and BullMQ cost), with
// autocannon; the row also gives the CPU per request of the Redis server and of the load
// generator, since all three share the machine's cores. (b) End to end: 10,000 signed events through that route (a web-only instance on
// Fastify), drained by two worker processes; the rate counts from the first request to the last
// handler run, and every event must have been handled exactly once.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import Redis from 'ioredis';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type BenchRow, fmt, forkBenchApp, median, rotate, sleep } from './bench-util.js';
import { load, type Round, signedEvent } from './webhook-throughput.bench.js';

export interface QueueBenchSettings {
  adapters: Array<'express' | 'fastify'>;
  connections: number;
  roundSeconds: number;
  pairs: number;
  warmupSeconds: number;
  /** Events of the end-to-end drain. */
  events: number;
  workers: number;
}

interface Stats {
  handled: number;
  duplicates: number;
  /** User CPU time of the process so far. */
  cpuMicros: number;
  /** System CPU time of the process so far (mostly socket calls to Redis and HTTP). */
  systemMicros: number;
}

const cpuOf = (s: Stats) => s.cpuMicros + s.systemMicros;

/** `BENCH_CPU_PROF=<dir>` profiles the acknowledgement benchmark's app (`--cpu-prof`), written when it stops. */
const profileDir = process.env.BENCH_CPU_PROF;

function startApp(args: string[], redisUrl: string, keyPrefix: string, profileName?: string): Promise<{ child: ChildProcess; url?: string }> {
  const execArgv = profileDir && profileName ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${profileName}`] : [];
  return forkBenchApp(join(__dirname, 'queue-bench-app.js'), args, {
    execArgv,
    env: { ...process.env, BENCH_REDIS_URL: redisUrl, BENCH_KEY_PREFIX: keyPrefix },
  });
}

/** Stops `child`: gently when it is profiled (the profile is written on exit), else at once. */
async function stopApp(child: ChildProcess): Promise<void> {
  if (!profileDir || child.exitCode !== null) {
    child.kill('SIGKILL');
    return;
  }
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send({ type: 'stop' });
  await Promise.race([exited, sleep(10_000)]);
  child.kill('SIGKILL');
}

function ask<T>(child: ChildProcess, type: 'stats' | 'ids'): Promise<T> {
  return new Promise((resolve) => {
    const onMessage = (m: { type?: string }) => {
      if (m?.type !== type) return;
      child.off('message', onMessage);
      resolve(m as T);
    };
    child.on('message', onMessage);
    child.send({ type });
  });
}

/** CPU (user + system) the Redis server has used so far, in µs, from `INFO cpu`. */
async function redisCpuMicros(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
}

interface QueueRound extends Round {
  /** The Redis server's CPU (user + system) per answered request, in µs. */
  redisCpuPerRequest: number;
  /** This process's CPU (user + system) per answered request, in µs: the load generator's. */
  loadCpuPerRequest: number;
}

async function measured(child: ChildProcess, redis: Redis, url: string, path: string, s: QueueBenchSettings): Promise<QueueRound> {
  const before = await ask<Stats>(child, 'stats');
  const redisBefore = await redisCpuMicros(redis);
  const loadBefore = process.cpuUsage();
  const round = await load(url, path, s.roundSeconds, s.connections);
  const loadCpu = process.cpuUsage(loadBefore);
  const redisCpu = (await redisCpuMicros(redis)) - redisBefore;
  const after = await ask<Stats>(child, 'stats');
  const answered = Math.max(1, round.total2xx + round.non2xx);
  round.cpuPerRequest = (after.cpuMicros - before.cpuMicros) / answered;
  return { ...round, redisCpuPerRequest: redisCpu / answered, loadCpuPerRequest: (loadCpu.user + loadCpu.system) / answered };
}

async function acknowledgement(adapter: 'express' | 'fastify', redis: TestRedisServer, s: QueueBenchSettings): Promise<BenchRow> {
  const { child, url } = await startApp(['web', adapter], redis.url, `bench-ack-${adapter}:`, `queue-ack-${adapter}.cpuprofile`);
  const probe = new Redis(redis.url, { lazyConnect: true });
  try {
    await probe.connect();
    const paths = ['/payments/webhook', '/floor', '/bare'];
    for (const path of paths) await load(url!, path, s.warmupSeconds, s.connections);
    const [queued, floor, bare] = (await rotate(
      s.pairs,
      paths.map((path) => () => measured(child, probe, url!, path, s)),
    )) as [QueueRound[], QueueRound[], QueueRound[]];
    const ratioTo = (side: QueueRound[]) => median(side.map((r, i) => r.rps / bare[i]!.rps));
    const ratio = ratioTo(queued);
    const failures = [...queued, ...floor, ...bare].reduce((n, r) => n + r.non2xx + r.errors, 0);
    const check = failures === 0 ? '' : ` (non-2xx/errors ${failures})`;
    const med = (side: QueueRound[], pick: (r: QueueRound) => number, digits?: number) => fmt(median(side.map(pick)), digits);
    return {
      benchmark: `5. queue ack req/s, ${adapter}`,
      measured:
        `queue route ${med(queued, (r) => r.rps)} vs bare ${med(bare, (r) => r.rps)} req/s ` +
        `(floor ${med(floor, (r) => r.rps)}: ${ratioTo(floor).toFixed(3)} of bare), ${s.connections} conns; ` +
        `app user CPU/request queue ${med(queued, (r) => r.cpuPerRequest)}, floor ${med(floor, (r) => r.cpuPerRequest)}, bare ${med(bare, (r) => r.cpuPerRequest)} µs; ` +
        `Redis queue ${med(queued, (r) => r.redisCpuPerRequest)}, floor ${med(floor, (r) => r.redisCpuPerRequest)} µs; ` +
        `load generator ${med(queued, (r) => r.loadCpuPerRequest)} vs ${med(bare, (r) => r.loadCpuPerRequest)} µs ` +
        `(user + system); p99 ${med(queued, (r) => r.p99, 2)} vs ${med(bare, (r) => r.p99, 2)} ms${check}`,
      figure: ratio.toFixed(3),
      target: '≥ 0.50',
      pass: ratio >= 0.5 && check === '',
    };
  } finally {
    probe.disconnect();
    await stopApp(child);
  }
}

async function drain(redis: TestRedisServer, s: QueueBenchSettings): Promise<BenchRow> {
  const prefix = 'bench-drain:';
  const starting = [
    startApp(['web', 'fastify'], redis.url, prefix),
    ...Array.from({ length: s.workers }, () => startApp(['worker'], redis.url, prefix)),
  ];
  const started = await Promise.allSettled(starting);
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    // the ones that did start must not outlive the bench
    for (const r of started) if (r.status === 'fulfilled') r.value.child.kill('SIGKILL');
    throw failed.reason;
  }
  const apps = started.map((r) => (r as PromiseFulfilledResult<Awaited<(typeof starting)[number]>>).value);
  const web = apps[0]!;
  const workers = apps.slice(1).map((a) => a.child);
  try {
    await sleep(500); // workers connected and polling
    const cpuBefore = await Promise.all(apps.map((a) => ask<Stats>(a.child, 'stats')));
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    const result = await autocannon({
      url: web.url!,
      connections: s.connections,
      amount: s.events,
      requests: [
        {
          method: 'POST',
          path: '/payments/webhook',
          setupRequest: (request) => {
            const event = signedEvent();
            return {
              ...request,
              body: event.body,
              headers: { 'content-type': 'application/json', 'x-service-signature': event.signature },
            };
          },
        },
      ],
    });
    const acknowledgedIn = seconds();
    let handled = 0;
    const deadline = Date.now() + 120_000;
    while (handled < result['2xx'] && Date.now() < deadline) {
      await sleep(20);
      handled = (await Promise.all(workers.map((w) => ask<Stats>(w, 'stats')))).reduce((n, st) => n + st.handled, 0);
    }
    const drainedIn = seconds();
    const stats = await Promise.all(workers.map((w) => ask<Stats>(w, 'stats')));
    const webStats = await ask<Stats>(web.child, 'stats');
    const webCpu = (cpuOf(webStats) - cpuOf(cpuBefore[0]!)) / s.events;
    const workerCpu = stats.reduce((n, st, i) => n + cpuOf(st) - cpuOf(cpuBefore[i + 1]!), 0) / s.events;
    const ids = await Promise.all(workers.map((w) => ask<{ ids: string[] }>(w, 'ids')));
    const distinct = new Set(ids.flatMap((x) => x.ids)).size;
    const runs = stats.reduce((n, st) => n + st.handled, 0);
    const once = result['2xx'] === s.events && runs === s.events && distinct === s.events && stats.every((st) => st.duplicates === 0);
    const rate = runs / drainedIn;
    return {
      benchmark: `5. queue end to end, ${s.workers} workers`,
      measured:
        `${fmt(s.events)} events: all acknowledged after ${fmt(acknowledgedIn, 2)} s (${fmt(result['2xx'] / acknowledgedIn)} acks/s), ` +
        `all handled after ${fmt(drainedIn, 2)} s; per worker ${stats.map((st) => fmt(st.handled)).join(' + ')}; ` +
        `CPU (user + system) per event: web ${fmt(webCpu)} µs, workers ${fmt(workerCpu)} µs; ` +
        `handled once each: ${once ? 'yes' : `NO (2xx ${result['2xx']}, runs ${runs}, distinct ${distinct})`}`,
      figure: `${fmt(rate)} events/s`,
      target: '≥ 1,000 events/s',
      pass: rate >= 1000 && once,
    };
  } finally {
    for (const app of apps) app.child.kill('SIGKILL');
  }
}

export async function queueThroughput(s: QueueBenchSettings): Promise<BenchRow[]> {
  const redis = await startRedisServer();
  try {
    const rows: BenchRow[] = [];
    for (const adapter of s.adapters) {
      rows.push(await acknowledgement(adapter, redis, s));
      await redis.restart(); // empty again: the acknowledged jobs are never worked
    }
    rows.push(await drain(redis, s));
    return rows;
  } finally {
    await redis.stop();
  }
}
