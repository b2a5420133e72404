import 'reflect-metadata';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildApp, startChildApp } from '../support/child-app.js';
import { paymentSucceeded, postSigned, RELIABILITY_WEBHOOK_SECRET, sleep, waitUntil } from '../support/reliability-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

const LEASE_MS = 500;

/** Starts test/reliability/fixtures/crash-app.ts in its own Node process; `block` makes `custom: 'block'` handlers hang. */
async function startChild(redisUrl: string, effectsFile: string, block: boolean): Promise<ChildApp & { webhookUrl: string }> {
  const child = await startChildApp(
    'test/reliability/fixtures/crash-app.ts',
    {
      PAYMENT_BASE_URL: 'http://127.0.0.1:9',
      PAYMENT_WEBHOOK_SECRET: RELIABILITY_WEBHOOK_SECRET,
      PAYMENT_REDIS_URL: redisUrl,
      PAYMENT_WEBHOOK_LEASE_MS: String(LEASE_MS),
      EFFECTS_FILE: effectsFile,
      CRASH_APP_BLOCK: block ? '1' : '0',
    },
    60_000,
  );
  return { ...child, webhookUrl: `${child.url}/payments/webhook` };
}

describe('reliability: the app process is killed while a handler runs', () => {
  let redis: TestRedisServer;
  let dir: string;
  const children: ChildApp[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    dir = mkdtempSync(join(tmpdir(), 'pg-crash-'));
  });
  afterAll(async () => {
    for (const c of children) await c.kill();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a redelivery after the lease expires is handled by a new process, exactly once overall', async () => {
    const effectsFile = join(dir, 'effects.log');
    writeFileSync(effectsFile, '');
    const lines = () => readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean);
    const count = (kind: 'entered' | 'done', eventId: string) => lines().filter((l) => l.startsWith(`${kind} ${eventId} `)).length;

    const first = await startChild(redis.url, effectsFile, true);
    children.push(first);
    const handledBefore = Array.from({ length: 5 }, () => paymentSucceeded('crash-ok'));
    for (const e of handledBefore) expect(await postSigned(first.webhookUrl, e)).toMatchObject({ status: 200 });

    const victim = paymentSucceeded('crash', 'block');
    // the delivery never gets an answer: its handler blocks, then the process dies
    const pending = postSigned(first.webhookUrl, victim).then(
      (r) => r.status,
      () => 'connection lost' as const,
    );
    await waitUntil('the blocking handler runs', () => count('entered', victim.eventId) === 1);
    await first.kill();
    expect(await pending).toBe('connection lost');
    expect(count('done', victim.eventId)).toBe(0);

    const second = await startChild(redis.url, effectsFile, false);
    children.push(second);
    // the service retries: 409 while the dead process's claim is leased, then the new process runs it
    const statuses: number[] = [];
    await waitUntil('the redelivery is acknowledged', async () => {
      // the same body as the first delivery, as the service resends it
      const r = await postSigned(second.webhookUrl, victim);
      statuses.push(r.status);
      if (r.status !== 200) await sleep(LEASE_MS / 5);
      return r.status === 200;
    }, 30_000);
    expect(statuses.filter((s) => s !== 409 && s !== 200)).toEqual([]);
    expect(count('entered', victim.eventId)).toBe(2);
    expect(count('done', victim.eventId)).toBe(1);

    // later copies of every event reach the new process: acknowledged, not run again
    for (const e of [victim, ...handledBefore]) {
      expect(await postSigned(second.webhookUrl, e)).toMatchObject({ status: 200, json: { duplicate: true } });
    }
    for (const e of handledBefore) expect(count('done', e.eventId)).toBe(1);
    expect(count('done', victim.eventId)).toBe(1);
  }, 120_000);
});
