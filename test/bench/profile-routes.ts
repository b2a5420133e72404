// `npm run bench:profile [-- express|fastify] [--seconds=15] [--runs=2]`: where a delivery's CPU goes.
// Loads each route of the webhook bench app alone (the module's route, then the floor), each in an
// app of its own started with `--cpu-prof`, and prints the self time per answered request of every
// function that differs between the two, from the module's own code and Node's alike. Not a
// benchmark (no ratio): the profile behind the README's "Where the gap goes".
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forkBenchApp } from './bench-util.js';
import { load } from './webhook-throughput.bench.js';

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

const ROUTES = { module: '/payments/webhook', floor: '/floor' } as const;

/** Self time per answered request (µs) of each function, keyed by name and file. */
async function profileRoute(adapter: string, path: string, seconds: number): Promise<Map<string, number>> {
  const dir = join(tmpdir(), `payment-bench-profile-${process.pid}-${Date.now()}`);
  const { child, url } = await forkBenchApp(join(__dirname, 'webhook-bench-app.js'), [adapter], { execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
  try {
    const warmUp = await load(url!, path, 3, 10); // in the profile too, so counted
    const round = await load(url!, path, seconds, 10);
    const answered = warmUp.total2xx + round.total2xx;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.send({ type: 'stop' }); // a gentle stop writes the profile
    await exited;
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))!;
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const selfByNode = new Map<number, number>();
    profile.samples.forEach((id, i) => selfByNode.set(id, (selfByNode.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
    const perFunction = new Map<string, number>();
    for (const node of profile.nodes) {
      const { functionName, url: source, lineNumber } = node.callFrame;
      if (functionName === '(idle)') continue;
      const where = source.replace(/^.*\/node_modules\//, '').replace(/^.*\/payment-bench\//, '').replace(/^file:\/\//, '');
      const key = `${functionName || '(anonymous)'} ${where}${where ? `:${lineNumber + 1}` : ''}`;
      perFunction.set(key, (perFunction.get(key) ?? 0) + (selfByNode.get(node.id) ?? 0) / answered);
    }
    return perFunction;
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

function mean(maps: Array<Map<string, number>>): Map<string, number> {
  const out = new Map<string, number>();
  for (const map of maps) for (const [key, value] of map) out.set(key, (out.get(key) ?? 0) + value / maps.length);
  return out;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const adapter = args.includes('fastify') ? 'fastify' : 'express';
  const seconds = Number(args.find((a) => a.startsWith('--seconds='))?.slice('--seconds='.length) ?? 15);
  const runs = Number(args.find((a) => a.startsWith('--runs='))?.slice('--runs='.length) ?? 2);
  const profiles: Record<keyof typeof ROUTES, Array<Map<string, number>>> = { module: [], floor: [] };
  for (let run = 0; run < runs; run++) {
    for (const route of Object.keys(ROUTES) as Array<keyof typeof ROUTES>) {
      process.stderr.write(`profiling the ${route} route on ${adapter}, run ${run + 1} of ${runs}...\n`);
      profiles[route].push(await profileRoute(adapter, ROUTES[route], seconds));
    }
  }
  const [moduleRoute, floor] = [mean(profiles.module), mean(profiles.floor)];
  const total = (map: Map<string, number>) => [...map.values()].reduce((sum, v) => sum + v, 0);
  const ownCode = (map: Map<string, number>) => [...map].filter(([key]) => / (lib|test\/bench)\//.test(key)).reduce((sum, [, v]) => sum + v, 0);
  console.log(`\n${adapter}: CPU per answered request (self time, mean of ${runs} runs of ${seconds} s per route)`);
  console.log(`  all:            module ${total(moduleRoute).toFixed(1)} µs, floor ${total(floor).toFixed(1)} µs`);
  console.log(`  own functions:  module ${ownCode(moduleRoute).toFixed(1)} µs (lib/), floor ${ownCode(floor).toFixed(1)} µs (its controller method)\n`);
  const keys = new Set([...moduleRoute.keys(), ...floor.keys()]);
  const rows = [...keys]
    .map((key) => ({ key, module: moduleRoute.get(key) ?? 0, floor: floor.get(key) ?? 0 }))
    .filter((row) => Math.abs(row.module - row.floor) >= 0.2)
    .sort((a, b) => Math.abs(b.module - b.floor) - Math.abs(a.module - a.floor));
  console.log('   module    floor   module−floor  function');
  for (const row of rows.slice(0, 60)) {
    console.log(`${row.module.toFixed(2).padStart(9)}${row.floor.toFixed(2).padStart(9)}${(row.module - row.floor).toFixed(2).padStart(15)}  ${row.key}`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
