// A host whose boot fails after the module built its Redis-backed parts must not be left with
// the module's Redis connections open: Nest runs no shutdown hook for an app that never
// finished creating, so nothing else would close them (a test runner or process would hang).
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { getWebhookEventStoreToken } from '../../lib/accounts/payment-account.tokens.js';
import { PaymentDeadLetterService } from '../../lib/queue/payment-dead-letter.service.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const SECRET = 'whsec_boot_failure_test_secret';

class BrokenHostDependency {}

describe('a host boot that fails after the module was built', () => {
  let redis: TestRedisServer;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startRedisServer();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.stop();
  });

  /** Clients connected to the server, the admin connection excluded. */
  const otherClients = async (): Promise<number> => ((await admin.client('LIST')) as string).trim().split('\n').length - 1;

  it.each([
    ['inline with a Redis store', { redisUrl: 'URL' }],
    ['queue mode', { processing: 'queue' as const, queueRedisUrl: 'URL' }],
  ])('%s: no connection is left open', async (_name, extra) => {
    const options = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v === 'URL' ? redis.url : v]));
    @Module({
      imports: [PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', clientId: 'id', clientSecret: 'secret', webhookSecret: SECRET, ...options })],
      providers: [
        {
          provide: BrokenHostDependency,
          // built after the module's store (and, in queue mode, its queue), which it needs
          inject: [getWebhookEventStoreToken(), PaymentDeadLetterService],
          useFactory: () => {
            throw new Error('the database is down');
          },
        },
      ],
    })
    class HostModule {}
    await expect(Test.createTestingModule({ imports: [HostModule] }).compile()).rejects.toThrow('the database is down');
    // the module's connection may have been opening when the boot failed
    await new Promise((resolve) => setTimeout(resolve, 300));
    await waitFor('the module\'s Redis connections to close', async () => (await otherClients()) === 0, 3000);
  });

  it('two forRoot() of one account: the boot error leaves no connection open', async () => {
    const forRoot = () => PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', webhookSecret: SECRET, redisUrl: redis.url, webhookRoute: false });
    @Module({ imports: [forRoot()] })
    class FirstModule {}
    @Module({ imports: [forRoot()] })
    class SecondModule {}
    await expect(Test.createTestingModule({ imports: [FirstModule, SecondModule] }).compile()).rejects.toThrow(/registered twice/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await waitFor('the module\'s Redis connections to close', async () => (await otherClients()) === 0, 3000);
  });
});
