// Compatibility matrix (issue 5): the packed tarball, installed into throw-away apps,
// must boot and handle a signed webhook on NestJS 12 and 11, Express and Fastify,
// in ESM ("type": "module") and CommonJS apps (all 8 combinations). Each app is a real child
// process (`node main.js`) talked to over HTTP; nothing is imported from lib/ here.
// Also: the host's own EventEmitterModule beside the package's, the Redis store from a packed
// install (ioredis 5 and 6), and TypeScript users type-checked against the shipped .d.ts.
import { createHmac, randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  buildAndPack,
  childEnv,
  createAndInstallApp,
  createSiblingApp,
  findRepoRoot,
  makeWorkDir,
  removeWorkDir,
  run,
  type RunningApp,
  startNodeApp,
  stopAllChildren,
} from '../support/compat-harness.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

// First run without an npm cache downloads ~180 packages per app; later runs take seconds.
const SETUP_TIMEOUT_MS = 8 * 60_000;
const APP_BOOT_TIMEOUT_MS = 90_000;

type AppDir = 'nest12-esm' | 'nest11-cjs' | 'nest12-cjs' | 'nest11-esm';

interface MatrixCase {
  label: string;
  dir: AppDir;
  adapter: 'express' | 'fastify';
  nestMajor: number;
  moduleSystem: 'esm' | 'cjs';
}

const CASES: MatrixCase[] = [
  { label: 'NestJS 12, ESM app, Express', dir: 'nest12-esm', adapter: 'express', nestMajor: 12, moduleSystem: 'esm' },
  { label: 'NestJS 12, ESM app, Fastify', dir: 'nest12-esm', adapter: 'fastify', nestMajor: 12, moduleSystem: 'esm' },
  { label: 'NestJS 11, CommonJS app, Express', dir: 'nest11-cjs', adapter: 'express', nestMajor: 11, moduleSystem: 'cjs' },
  { label: 'NestJS 11, CommonJS app, Fastify', dir: 'nest11-cjs', adapter: 'fastify', nestMajor: 11, moduleSystem: 'cjs' },
  { label: 'NestJS 12, CommonJS app, Express', dir: 'nest12-cjs', adapter: 'express', nestMajor: 12, moduleSystem: 'cjs' },
  { label: 'NestJS 12, CommonJS app, Fastify', dir: 'nest12-cjs', adapter: 'fastify', nestMajor: 12, moduleSystem: 'cjs' },
  { label: 'NestJS 11, ESM app, Express', dir: 'nest11-esm', adapter: 'express', nestMajor: 11, moduleSystem: 'esm' },
  { label: 'NestJS 11, ESM app, Fastify', dir: 'nest11-esm', adapter: 'fastify', nestMajor: 11, moduleSystem: 'esm' },
];

// Fresh per run; they only ever reach child processes on loopback.
const credentials = {
  COMPAT_CLIENT_ID: 'compat-client',
  COMPAT_CLIENT_SECRET: `compat-secret-${randomBytes(8).toString('hex')}`,
  COMPAT_WEBHOOK_SECRET: `whsec_compat_${randomBytes(8).toString('hex')}`,
};

// What a host app of each major typically has next to the package: its own @nestjs/config
// and @nestjs/event-emitter (the Nest 11 generation is config 4 / event-emitter 3; both are
// peer dependencies of the package, so it uses the host's copies), and one major of the optional peer ioredis
// (so the package's lazy require('ioredis') is proven against both majors of its range); the Nest 12 apps
// also have the optional peer bullmq (queue mode).
const HOST_EXTRAS: Record<number, Record<string, string>> = {
  12: { '@nestjs/config': '^12.0.0', '@nestjs/event-emitter': '^12.0.0', ioredis: '^6.0.0', bullmq: '^6.7.0' },
  11: { '@nestjs/config': '^4.0.0', '@nestjs/event-emitter': '^3.0.0', ioredis: '^5.0.0' },
};

function nestDependencies(major: number, tarball: string): Record<string, string> {
  return {
    ...HOST_EXTRAS[major],
    '@nestjs/common': `^${major}.0.0`,
    '@nestjs/core': `^${major}.0.0`,
    '@nestjs/platform-express': `^${major}.0.0`,
    '@nestjs/platform-fastify': `^${major}.0.0`,
    'reflect-metadata': '^0.2.2',
    rxjs: '^7.8.2',
    'nestjs-payment-gateway': `file:${tarball}`,
  };
}

interface SignedEvent {
  body: string;
  signature: string;
  eventId: string;
}

let workDir: string | undefined;
let repoRoot: string;
const appDirs = new Map<AppDir, string>();
let simulator: RunningApp | undefined;
let redis: TestRedisServer | undefined;
let packedFiles: string[] = [];

beforeAll(async () => {
  workDir = await makeWorkDir();
  repoRoot = await findRepoRoot();
  const fixtures = join(repoRoot, 'test', 'compat', 'fixtures');
  const packed = await buildAndPack(repoRoot, workDir);
  packedFiles = packed.files;
  const tarball = packed.tarball;
  const appModule = join(fixtures, 'compat-app-module.cjs');
  const esmFiles = {
    '.env': join(fixtures, 'host.env'),
    'main.js': join(fixtures, 'compat-app.mjs'),
    'tools.js': join(fixtures, 'compat-tools.mjs'),
    'app-module.cjs': appModule,
  };
  const cjsFiles = {
    '.env': join(fixtures, 'host.env'),
    'main.js': join(fixtures, 'compat-app.cjs'),
    'tools.js': join(fixtures, 'compat-tools.cjs'),
    'app-module.cjs': appModule,
  };

  // one install per Nest major, both at once (npm's cache is safe to share)
  const [nest12, nest11] = await Promise.all([
    createAndInstallApp(workDir, {
      name: 'nest12-esm',
      manifest: { type: 'module' },
      dependencies: nestDependencies(12, tarball),
      files: esmFiles,
    }),
    createAndInstallApp(workDir, {
      name: 'nest11-cjs',
      dependencies: nestDependencies(11, tarball),
      files: cjsFiles,
    }),
  ]);
  appDirs.set('nest12-esm', nest12);
  appDirs.set('nest11-cjs', nest11);
  // the other module system of each major, reusing that major's install
  appDirs.set('nest12-cjs', await createSiblingApp(workDir, nest12, { name: 'nest12-cjs', files: cjsFiles }));
  appDirs.set(
    'nest11-esm',
    await createSiblingApp(workDir, nest11, { name: 'nest11-esm', manifest: { type: 'module' }, files: esmFiles }),
  );

  simulator = await startNodeApp(nest12, ['tools.js', 'simulator'], credentials, APP_BOOT_TIMEOUT_MS);
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await stopAllChildren();
  await redis?.stop();
  await removeWorkDir(workDir);
}, 60_000);

describe('the packed tarball', () => {
  it('ships the CommonJS and the ES module builds with typings for . and ./testing, the licence and documents, and nothing else', () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        'package.json',
        'LICENSE',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/testing/index.js',
        'dist/testing/index.d.ts',
        'dist/esm/package.json',
        'dist/esm/index.js',
        'dist/esm/index.d.ts',
        'dist/esm/testing/index.js',
        'dist/esm/testing/index.d.ts',
      ]),
    );
    const unexpected = packedFiles.filter(
      (path) =>
        !['package.json', 'README.md', 'LICENSE', 'CONTRIBUTING.md', 'docs/service-contract.md', 'dist/esm/package.json'].includes(path) &&
        !/^dist\/.+\.(js|d\.ts)$/.test(path),
    );
    expect(unexpected).toEqual([]);
  });

  // TypeScript before 5.3 cannot parse an import attribute, skipLibCheck or not, so one in our
  // typings broke every user on 5.0-5.2 (an inferred type of ESM-only Nest 12 read from the CommonJS build)
  it('typings every TypeScript 5.x parses: no import attributes (`resolution-mode`, TS 5.3 syntax)', async () => {
    const installed = join(appDirs.get('nest12-esm')!, 'node_modules', 'nestjs-payment-gateway');
    const typings = packedFiles.filter((path) => path.endsWith('.d.ts'));
    expect(typings.length).toBeGreaterThan(50);
    const withAttributes: string[] = [];
    for (const path of typings) {
      if (/resolution-mode|import\([^)]*\{\s*(with|assert)\s*:/.test(await readFile(join(installed, path), 'utf8'))) withAttributes.push(path);
    }
    expect(withAttributes).toEqual([]);
  });

  it('ships README.md, the package page on npm, and the two documents it links to', () => {
    expect(packedFiles).toEqual(expect.arrayContaining(['README.md', 'CONTRIBUTING.md', 'docs/service-contract.md']));
  });
});

// A monorepo library that depends on the package and on ioredis, used by an app whose own folder
// reaches neither: the ES module build must find ioredis where the package is installed (it looked
// only from the app's entry script and the working directory), as the CommonJS build does.
describe('an optional peer installed beside the package, out of reach of the app', () => {
  it.each(['esm', 'cjs'] as const)('is found by the %s build', async (build) => {
    const installed = join(appDirs.get('nest12-esm')!, 'node_modules', 'nestjs-payment-gateway', 'dist', ...(build === 'esm' ? ['esm'] : []), 'index.js');
    const app = join(workDir!, `peer-out-of-reach-${build}`);
    await mkdir(app, { recursive: true });
    const script = build === 'esm' ? 'main.mjs' : 'main.cjs';
    const load = build === 'esm' ? `await import(${JSON.stringify(pathToFileURL(installed).href)})` : `require(${JSON.stringify(installed)})`;
    const body = `const { RedisWebhookEventStore } = ${load};\nconst store = new RedisWebhookEventStore('redis://127.0.0.1:1');\nawait store.close();\nconsole.log('built', store.constructor.name);\n`;
    await writeFile(join(app, script), build === 'esm' ? body : `(async () => {\n${body}})();\n`);
    const { stdout } = await run(process.execPath, [script], app);
    expect(stdout).toContain('built RedisWebhookEventStore');
  });
});

/** Builds and signs a fresh payment.succeeded with the installed package's ./testing export. */
async function signedEvent(dir: string): Promise<SignedEvent> {
  const { stdout } = await run(process.execPath, ['tools.js', 'sign'], dir, childEnv(credentials));
  return JSON.parse(stdout.trim().split('\n').pop() ?? '') as SignedEvent;
}

async function postWebhook(app: RunningApp, body: string, signature: string) {
  const res = await fetch(`${app.url}/payments/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-signature': signature },
    body,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}

async function getJson(app: RunningApp, path: string) {
  const res = await fetch(`${app.url}${path}`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Independent check of spec 6.3: v1 is the hex HMAC-SHA256 of "<t>.<raw body>". */
function expectSpecSignature(signed: SignedEvent): void {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(signed.signature);
  expect(match).not.toBeNull();
  const [, t, v1] = match!;
  const expected = createHmac('sha256', credentials.COMPAT_WEBHOOK_SECRET).update(`${t}.${signed.body}`).digest('hex');
  expect(v1).toBe(expected);
}

describe.each(CASES)('$label', (matrixCase) => {
  let app: RunningApp | undefined;

  beforeAll(async () => {
    const dir = appDirs.get(matrixCase.dir);
    if (!dir || !simulator) throw new Error('matrix setup failed (see the first error of this file)');
    const env = {
      ...credentials,
      COMPAT_ADAPTER: matrixCase.adapter,
      COMPAT_BASE_URL: String(simulator.ready.url),
      // Nest's logger at every level (plain text), so the secret checks below see everything
      COMPAT_LOGGER: '1',
      NO_COLOR: '1',
    };
    app = await startNodeApp(dir, ['main.js'], env, APP_BOOT_TIMEOUT_MS);
  }, APP_BOOT_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    await app?.stop();
  });

  function running(): RunningApp {
    if (!app) throw new Error('app did not start');
    return app;
  }

  it('boots the installed tarball with PaymentModule.forRoot on the expected runtime', () => {
    const { ready } = running();
    expect(ready.nest).toEqual(expect.stringMatching(new RegExp(`^${matrixCase.nestMajor}\\.`)));
    expect(ready.moduleSystem).toBe(matrixCase.moduleSystem);
    // one copy of each in the process: the package uses the host's @nestjs/common and core, and
    // the host's own @nestjs/config and @nestjs/event-emitter (peer dependencies, not nested copies)
    expect(ready.nestCopies).toEqual({ common: 1, core: 1, config: 1, eventEmitter: 1 });
    // Nest 11 hosts keep their event-emitter 3.x, and the package works with it
    expect(ready.hostEventEmitter).toEqual(expect.stringMatching(matrixCase.nestMajor === 11 ? /^3\./ : /^12\./));
    expect(ready.adapter).toBe(matrixCase.adapter);
    // loaded from the installed tarball, never from the repository sources: an ESM app imports
    // the ES module build, a CommonJS app requires the CommonJS one
    const entry = String(ready.packageEntry);
    const build = matrixCase.moduleSystem === 'esm' ? 'dist[\\\\/]esm' : 'dist';
    expect(entry).toMatch(new RegExp(`node_modules[\\\\/]nestjs-payment-gateway[\\\\/]${build}[\\\\/]index\\.js$`));
    expect(entry).toContain(workDir!);
  });

  it('handles a signed payment.succeeded once; its duplicate gets 200 { duplicate: true } and no second run', async () => {
    const target = running();
    const signed = await signedEvent(appDirs.get(matrixCase.dir)!);
    expectSpecSignature(signed);

    const first = await postWebhook(target, signed.body, signed.signature);
    expect(first).toEqual({ status: 200, body: { received: true } });

    const duplicate = await postWebhook(target, signed.body, signed.signature);
    expect(duplicate).toEqual({ status: 200, body: { received: true, duplicate: true } });

    const handled = await getJson(target, '/handled');
    expect(handled).toEqual({ status: 200, body: { count: 1, eventIds: [signed.eventId] } });
  });

  it("re-emits on the host's own EventEmitter2 (wildcard: false kept): its listener hears each event once", async () => {
    const target = running();
    const before = (await getJson(target, '/host-events')).body as { pings: number; paymentEvents: number };
    const signed = await signedEvent(appDirs.get(matrixCase.dir)!);
    expect((await postWebhook(target, signed.body, signed.signature)).status).toBe(200);
    expect((await postWebhook(target, signed.body, signed.signature)).body).toEqual({ received: true, duplicate: true });
    // the host's listener heard the event once (not for its duplicate) and its own ping once;
    // an emit of 'compat.*' reached nothing, so the emitter still has the host's wildcard: false
    expect(await getJson(target, '/host-events')).toEqual({
      status: 200,
      body: { pings: before.pings + 1, paymentEvents: before.paymentEvents + 1, wildcardHeard: 0 },
    });
  });

  it("keeps the host's ConfigModule choice: ignoreEnvFile leaves the app's .env unread", async () => {
    expect(await getJson(running(), '/host-config')).toEqual({ status: 200, body: { dotenvMarker: null } });
  });

  it('rejects a bad signature with a typed 4xx and does not run the handler', async () => {
    const target = running();
    const signed = await signedEvent(appDirs.get(matrixCase.dir)!);
    const before = await getJson(target, '/handled');
    // flip the last hex digit of v1
    const last = signed.signature.at(-1)!;
    const tampered = signed.signature.slice(0, -1) + (last === '0' ? '1' : '0');

    const res = await postWebhook(target, signed.body, tampered);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body).toMatchObject({ code: 'WEBHOOK_SIGNATURE_MISMATCH' });
    expect(JSON.stringify(res.body)).not.toContain(credentials.COMPAT_WEBHOOK_SECRET);
    expect(await getJson(target, '/handled')).toEqual(before);
  });

  // the parser refuses it before the route: the module shapes that answer at the adapter, and on
  // Fastify knows the route by the config Nest gives it (the same metadata key on Nest 11 and 12)
  it("answers a body the JSON parser refuses with the route's code, and a path beside it with the host's", async () => {
    const target = running();
    expect(await postWebhook(target, '{broken', 'sig')).toMatchObject({ status: 400, body: { code: 'WEBHOOK_INVALID_JSON' } });
    const elsewhere = await fetch(`${target.url}/payments/webhook-not`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{broken' });
    expect(elsewhere.status).toBe(400);
    expect(await elsewhere.text()).not.toContain('WEBHOOK_');
  });

  it('calls the service through PaymentGatewayService (listGateways against the simulator)', async () => {
    const res = await getJson(running(), '/gateways');
    expect(res.status).toBe(200);
    const gateways = res.body.gateways as Array<{ id?: string }>;
    expect(Array.isArray(gateways)).toBe(true);
    expect(gateways.map((g) => g.id)).toContain('card');
  });

  // last: closes the app (PaymentGatewayService's keep-alive agent, the event store, the adapter)
  it('shuts down cleanly on SIGTERM (exit code 0), with no warning and no secret in its output', async () => {
    const target = running();
    expect(await target.stop()).toEqual({ code: 0, signal: null });
    // nothing on stderr over the whole run: no warnings (require(esm), deprecations, listeners)
    expect(target.stderr()).toBe('');
    // every log level was on (COMPAT_LOGGER): no secret ever reached the output
    expect(target.output()).toContain('[PaymentEvents]');
    expect(target.output()).not.toContain(credentials.COMPAT_CLIENT_SECRET);
    expect(target.output()).not.toContain(credentials.COMPAT_WEBHOOK_SECRET);
  });
});

/**
 * `redisUrl` from a packed install: the package require()s the optional peer ioredis from
 * the app's node_modules. Two processes of the same app share one Redis, so an event
 * handled by the first is a duplicate for the second (the memory store could not do that).
 */
describe.each([
  { label: 'NestJS 12 ESM app + ioredis 6, Express', dir: 'nest12-esm' as AppDir, adapter: 'express', ioredis: 6 },
  { label: 'NestJS 11 CommonJS app + ioredis 5, Fastify', dir: 'nest11-cjs' as AppDir, adapter: 'fastify', ioredis: 5 },
])('Redis store: $label', ({ dir, adapter, ioredis }) => {
  const instances: RunningApp[] = [];

  beforeAll(async () => {
    const appDir = appDirs.get(dir);
    if (!appDir || !simulator) throw new Error('matrix setup failed (see the first error of this file)');
    redis ??= await startRedisServer();
    const env = {
      ...credentials,
      COMPAT_ADAPTER: adapter,
      COMPAT_BASE_URL: String(simulator.ready.url),
      COMPAT_REDIS_URL: redis.url,
    };
    instances.push(await startNodeApp(appDir, ['main.js'], env, APP_BOOT_TIMEOUT_MS));
    // the second started from elsewhere, as a service manager may: the optional peer ioredis is still
    // found from the app (the ES module build has no require of its own to resolve it with)
    instances.push(await startNodeApp(tmpdir(), [join(appDir, 'main.js')], env, APP_BOOT_TIMEOUT_MS));
  }, 2 * APP_BOOT_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
  });

  it('handles an event once across two instances sharing Redis', async () => {
    expect(instances).toHaveLength(2);
    const [first, second] = instances as [RunningApp, RunningApp];
    expect(first.ready.ioredis).toEqual(expect.stringMatching(new RegExp(`^${ioredis}\\.`)));
    const signed = await signedEvent(appDirs.get(dir)!);

    expect(await postWebhook(first, signed.body, signed.signature)).toEqual({ status: 200, body: { received: true } });
    expect(await postWebhook(second, signed.body, signed.signature)).toEqual({
      status: 200,
      body: { received: true, duplicate: true },
    });

    expect((await getJson(first, '/handled')).body).toEqual({ count: 1, eventIds: [signed.eventId] });
    expect((await getJson(second, '/handled')).body).toEqual({ count: 0, eventIds: [] });
  });

  it('shuts both instances down cleanly (the Redis connection is closed on app.close())', async () => {
    for (const instance of instances) expect(await instance.stop()).toEqual({ code: 0, signal: null });
  });
});

/**
 * `processing: 'queue'` from a packed install: the package loads the optional peer bullmq from the
 * app's node_modules (the ES module build has no require of its own) and one process acknowledges
 * and works.
 */
describe.each([
  { label: 'NestJS 12 ESM app, Express', dir: 'nest12-esm' as AppDir, adapter: 'express' },
  { label: 'NestJS 12 CommonJS app, Fastify', dir: 'nest12-cjs' as AppDir, adapter: 'fastify' },
])('Queue mode: $label', ({ dir, adapter }) => {
  let app: RunningApp | undefined;

  beforeAll(async () => {
    const appDir = appDirs.get(dir);
    if (!appDir || !simulator) throw new Error('matrix setup failed (see the first error of this file)');
    redis ??= await startRedisServer();
    app = await startNodeApp(
      appDir,
      ['main.js'],
      { ...credentials, COMPAT_ADAPTER: adapter, COMPAT_BASE_URL: String(simulator.ready.url), COMPAT_REDIS_URL: redis.url, COMPAT_PROCESSING: 'queue' },
      APP_BOOT_TIMEOUT_MS,
    );
  }, APP_BOOT_TIMEOUT_MS + 10_000);

  afterAll(async () => {
    await app?.stop();
  });

  it('acknowledges a signed event once Redis holds it, then the worker handles it once', async () => {
    const running = app!;
    const signed = await signedEvent(appDirs.get(dir)!);
    expect(await postWebhook(running, signed.body, signed.signature)).toEqual({ status: 200, body: { received: true, queued: true } });
    const deadline = Date.now() + 15_000;
    let handled = (await getJson(running, '/handled')).body as { count: number; eventIds: string[] };
    while (handled.count === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      handled = (await getJson(running, '/handled')).body as { count: number; eventIds: string[] };
    }
    expect(handled).toEqual({ count: 1, eventIds: [signed.eventId] });
    expect(await postWebhook(running, signed.body, signed.signature)).toEqual({ status: 200, body: { received: true, duplicate: true } });
  });

  it('shuts down cleanly (exit code 0): the worker and the queue connections are closed on app.close()', async () => {
    expect(await app!.stop()).toEqual({ code: 0, signal: null });
  });
});

/**
 * A NestJS 12 ESM app's own jest e2e test (jest's ESM mode, as the README suggests): jest's
 * module runtime cannot require() an ES module, so this works only because such an app
 * imports the package's ES module build. The repo's jest runs it, rooted in the temp app, so
 * every import resolves from the app's node_modules.
 */
describe('a jest e2e test of a NestJS 12 ESM app', () => {
  it('imports the installed package and its simulator and creates a payment', async () => {
    if (appDirs.size === 0) throw new Error('matrix setup failed (see the first error of this file)');
    const dir = appDirs.get('nest12-esm')!;
    await copyFile(join(repoRoot, 'test', 'compat', 'fixtures', 'compat-jest.test.mjs'), join(dir, 'payment.e2e.test.mjs'));
    const jest = join(repoRoot, 'node_modules', 'jest', 'bin', 'jest.js');
    const config = JSON.stringify({ rootDir: dir, testMatch: ['<rootDir>/payment.e2e.test.mjs'], transform: {}, cache: false });
    const env = { ...childEnv(), NODE_OPTIONS: '--experimental-vm-modules' };
    const { stdout, stderr } = await run(process.execPath, [jest, '--config', config, '--ci', '--colors=false'], dir, env);
    expect(`${stdout}${stderr}`).toMatch(/Tests:\s+1 passed, 1 total/);
  }, 120_000);
});

/**
 * The shipped .d.ts files, as a TypeScript user of each Nest major sees them: the repo's
 * TypeScript checks the consumer fixture as consumer.mts (an ESM file) and consumer.cts
 * (a CommonJS file) in one program, with module/moduleResolution nodenext (on TS >= 5.8
 * it models Node's require(esm)) and skipLibCheck off, so errors inside our typings count.
 * One program per install keeps the library check to once per major.
 */
describe('TypeScript consumers against the installed typings', () => {
  interface TypeCheck {
    label: string;
    install: AppDir;
    module: 'nodenext' | 'node16' | 'commonjs';
    /** @default module */
    moduleResolution?: 'node10';
    skipLibCheck: boolean;
    files: string[];
    /** Emit the files' declarations (a library on the package), and check what they import. */
    declaration?: true;
  }
  const BOTH = ['consumer.mts', 'consumer.cts'];
  const ESM = ['consumer.mts'];
  const typeChecks: TypeCheck[] = [
    { label: 'Nest 12, nodenext', install: 'nest12-esm', module: 'nodenext', skipLibCheck: false, files: BOTH },
    { label: 'Nest 11, nodenext', install: 'nest11-cjs', module: 'nodenext', skipLibCheck: false, files: BOTH },
    // older settings: node16 cannot model require(esm), so our CommonJS typings importing the
    // ESM-only Nest 12 are reported inside node_modules unless skipLibCheck (Nest CLI default);
    // a .cts file cannot import Nest 12 at all under node16, whatever this package does
    { label: 'Nest 12, node16 + skipLibCheck', install: 'nest12-esm', module: 'node16', skipLibCheck: true, files: ESM },
    // the classic CommonJS setting of older Nest CLI apps (skipLibCheck on): no `exports`
    // support, so ./testing resolves through typesVersions
    { label: 'Nest 11, commonjs + node10 resolution', install: 'nest11-cjs', module: 'commonjs', moduleResolution: 'node10', skipLibCheck: true, files: ['consumer.ts'] },
    // a library's declarations name every inferred type through the entry points (Nest CLI defaults: declaration on)
    { label: 'library on Nest 12, nodenext, declarations', install: 'nest12-esm', module: 'nodenext', skipLibCheck: true, files: ['library.mts', 'library.cts'], declaration: true },
    { label: 'library on Nest 11, node10, declarations', install: 'nest11-cjs', module: 'commonjs', moduleResolution: 'node10', skipLibCheck: true, files: ['library.ts'], declaration: true },
  ];
  const results = new Map<string, Promise<string>>();

  beforeAll(async () => {
    if (appDirs.size === 0) throw new Error('matrix setup failed (see the first error of this file)');
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const fixtures = join(repoRoot, 'test', 'compat', 'fixtures');
    for (const [index, check] of typeChecks.entries()) {
      const dir = appDirs.get(check.install)!;
      for (const name of ['consumer', 'library']) {
        for (const extension of ['mts', 'cts', 'ts']) await copyFile(join(fixtures, `compat-${name}.ts`), join(dir, `${name}.${extension}`));
      }
      const outDir = `declarations-${index}`;
      const tsconfig = {
        compilerOptions: {
          target: 'ES2022',
          module: check.module,
          moduleResolution: check.moduleResolution ?? check.module,
          strict: true,
          // what many strict projects add: an option given `process.env.X` (string | undefined) must still type-check
          exactOptionalPropertyTypes: true,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          skipLibCheck: check.skipLibCheck,
          ...(check.declaration ? { declaration: true, emitDeclarationOnly: true, outDir } : { noEmit: true }),
          // the temp apps do not install @types/node; borrow the repo's
          typeRoots: [join(repoRoot, 'node_modules', '@types')],
          types: ['node'],
        },
        files: check.files,
      };
      const file = `tsconfig.check-${index}.json`;
      await writeFile(join(dir, file), JSON.stringify(tsconfig, null, 2));
      // all at once; each test awaits its own (a failure carries tsc's output)
      results.set(
        check.label,
        run(process.execPath, [tsc, '-p', file], dir).then(
          async () => (check.declaration ? deepImportsIn(join(dir, outDir), check.files) : 'ok'),
          (error: Error) => error.message,
        ),
      );
    }
  });

  /** 'ok', or the lines of the emitted declarations that import the package's files past its entry points. */
  async function deepImportsIn(outDir: string, files: string[]): Promise<string> {
    const emitted = files.map((file) => file.replace(/\.(m|c)?ts$/, (_, kind: string | undefined) => `.d.${kind ?? ''}ts`));
    const texts = await Promise.all(emitted.map((file) => readFile(join(outDir, file), 'utf8')));
    const deep = texts.flatMap((text) => text.split('\n')).filter((line) => /nestjs-payment-gateway\/(dist|lib)\//.test(line));
    return deep.length === 0 ? 'ok' : `declarations import past the entry points:\n${deep.join('\n')}`;
  }

  it.each(typeChecks.map((check) => [check.label, check.files.join(' + ')]))(
    '%s: %s type-check, and the typed @OnPaymentEvent still rejects wrong handlers',
    async (label) => {
      expect(await results.get(label)).toBe('ok');
    },
    180_000,
  );
});
