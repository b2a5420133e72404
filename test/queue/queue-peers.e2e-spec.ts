import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { startChildApp } from '../support/child-app.js';

const ROOT = process.cwd();

/**
 * An app outside the project, with its own copy of the library and a node_modules that has
 * every package the project installed but the optional peers ioredis and bullmq: a host that
 * installed neither. (The library looks for them from where it is itself, so a copy that sits
 * in the project would find the project's.)
 */
function appWithoutOptionalPeers(dir: string): string {
  cpSync(join(ROOT, 'lib'), join(dir, 'lib'), { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== 'ioredis' && name !== 'bullmq' && !name.startsWith('.')) symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
  }
  const from = (path: string) => JSON.stringify(join(dir, path));
  const file = join(dir, 'queue-app.ts');
  writeFileSync(
    file,
    [
      `import ${from('node_modules/reflect-metadata/Reflect.js')};`,
      `import { Module } from ${from('node_modules/@nestjs/common/index.js')};`,
      `import { NestFactory } from ${from('node_modules/@nestjs/core/index.js')};`,
      `import { PaymentModule } from ${from('lib/payment.module.ts')};`,
      `@Module({ imports: [PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', webhookSecret: 'whsec_x', processing: 'queue', redisUrl: 'redis://127.0.0.1:1' })] })`,
      'class AppModule {}',
      'await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false });',
      "process.stdout.write('READY\\n');",
    ].join('\n'),
  );
  return relative(ROOT, file);
}

describe('queue mode without its optional peers', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'payment-no-peers-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('fails at boot with one error naming both packages to install, not first ioredis then bullmq', async () => {
    const failure = await startChildApp(appWithoutOptionalPeers(dir), {}, 25_000, dir).then(
      async (app) => {
        await app.stop();
        return 'the app booted';
      },
      (error: Error) => error.message,
    );
    expect(failure).toContain('BullMqMissingError');
    expect(failure).toContain('(missing: ioredis, bullmq)');
    // says whose setting asked for them
    expect(failure).toContain("Account 'default' has processing: 'queue' (the processing option), which needs");
    expect(failure).not.toContain('RedisClientMissingError');
  });
});
