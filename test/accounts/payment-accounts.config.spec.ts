// Configuration of named accounts: PAYMENT_<ACCOUNT>_* variables, forRootAsync, shared
// infrastructure variables, and the boot errors that name the account at fault.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getPaymentGatewayToken, getPaymentOptionsToken } from '../../lib/accounts/payment-account.tokens.js';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentConfigurationError } from '../../lib/config/payment-configuration.errors.js';
import type { ResolvedPaymentOptions } from '../../lib/config/payment-module-options.interface.js';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import { PaymentModule } from '../../lib/payment.module.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { CollectingLogger } from '../support/collecting-logger.js';

function withEnv(values: Record<string, string>): () => void {
  const saved = new Map<string, string | undefined>();
  for (const key of Object.keys(process.env)) if (key.startsWith('PAYMENT_')) saved.set(key, process.env[key]);
  for (const key of saved.keys()) delete process.env[key];
  Object.assign(process.env, values);
  return () => {
    for (const key of Object.keys(process.env)) if (key.startsWith('PAYMENT_')) delete process.env[key];
    for (const [key, value] of saved) if (value !== undefined) process.env[key] = value;
  };
}

async function boot(imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>, providers: any[] = []) {
  const ref = await Test.createTestingModule({ imports, providers }).compile();
  ref.useLogger(false);
  await ref.init();
  return ref;
}

async function bootError(imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>, providers: any[] = []) {
  const error = await boot(imports, providers).then(
    async (ref) => {
      await ref.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PaymentConfigurationError);
  return error as PaymentConfigurationError;
}

describe('named account configuration', () => {
  let restore: () => void = () => undefined;
  afterEach(() => restore());

  it('reads PAYMENT_<ACCOUNT>_* (name upper-cased, other characters → _), explicit options win', async () => {
    restore = withEnv({
      PAYMENT_EU_WEST_BASE_URL: 'https://eu.pay.example.com',
      PAYMENT_EU_WEST_ENVIRONMENT: 'live',
      PAYMENT_EU_WEST_CLIENT_ID: 'eu-client',
      PAYMENT_EU_WEST_CLIENT_SECRET: 'eu-secret',
      PAYMENT_EU_WEST_WEBHOOK_SECRET: 'whsec_a,whsec_b',
      PAYMENT_EU_WEST_HTTP_TIMEOUT_MS: '2500',
      // the default account's variables are not the named account's
      PAYMENT_BASE_URL: 'https://default.pay.example.com',
      PAYMENT_CLIENT_ID: 'default-client',
      PAYMENT_CLIENT_SECRET: 'default-secret',
    });
    const ref = await boot([PaymentModule.forRoot({ account: 'eu-west', httpTimeoutMs: 9000 }), PaymentModule.forRoot()]);
    const eu = ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu-west'));
    expect(eu).toMatchObject({
      account: 'eu-west',
      baseUrl: 'https://eu.pay.example.com',
      apiBaseUrl: 'https://eu.pay.example.com/api/v1',
      clientId: 'eu-client',
      webhookSecrets: ['whsec_a', 'whsec_b'],
      webhookPath: 'payments/eu-west/webhook',
      httpTimeoutMs: 9000,
    });
    expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken())).toMatchObject({ account: 'default', clientId: 'default-client' });
    await ref.close();
  });

  it('PAYMENT_<ACCOUNT>_WEBHOOK_PATH overrides the default path payments/<account>/webhook', async () => {
    restore = withEnv({ PAYMENT_EU_BASE_URL: 'https://eu.example.com', PAYMENT_EU_WEBHOOK_PATH: 'hooks/eu' });
    const ref = await boot([PaymentModule.forRoot({ account: 'eu' })]);
    expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu')).webhookPath).toBe('hooks/eu');
    await ref.close();
  });

  it('takes the shared infrastructure variables (Redis URL, key prefix) from PAYMENT_* when the account has none', async () => {
    restore = withEnv({
      PAYMENT_EU_BASE_URL: 'https://eu.example.com',
      PAYMENT_REDIS_URL: 'redis://127.0.0.1:1/0',
      PAYMENT_REDIS_KEY_PREFIX: 'shop:',
      PAYMENT_US_BASE_URL: 'https://us.example.com',
      PAYMENT_US_REDIS_KEY_PREFIX: 'shop-us:',
    });
    const eu = await boot([PaymentModule.forRoot({ account: 'eu', readEnv: true })]).then(async (ref) => {
      const options = ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu'));
      await ref.close();
      return options;
    });
    expect(eu).toMatchObject({ redisUrl: 'redis://127.0.0.1:1/0', redisKeyPrefix: 'shop:' });
    const us = await boot([PaymentModule.forRoot({ account: 'us' })]).then(async (ref) => {
      const options = ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('us'));
      await ref.close();
      return options;
    });
    expect(us).toMatchObject({ redisKeyPrefix: 'shop-us:' });
  });

  it('defaults the Redis key prefix to one that includes the environment', async () => {
    restore = withEnv({});
    const ref = await boot([
      PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', environment: 'live' }),
      PaymentModule.forRoot({ account: 'test', baseUrl: 'https://pay.example.com' }),
    ]);
    expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken()).redisKeyPrefix).toBe('payment-gateway:live:');
    expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('test')).redisKeyPrefix).toBe('payment-gateway:sandbox:');
    await ref.close();
  });

  it('forRootAsync({ account, useFactory }) registers a named account, env filling the gaps', async () => {
    restore = withEnv({ PAYMENT_EU_CLIENT_ID: 'eu-env-client', PAYMENT_EU_CLIENT_SECRET: 'eu-env-secret' });
    const ref = await boot([
      PaymentModule.forRootAsync({ account: 'eu', useFactory: async () => ({ baseUrl: 'https://async-eu.example.com' }) }),
    ]);
    expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu'))).toMatchObject({
      account: 'eu',
      baseUrl: 'https://async-eu.example.com',
      clientId: 'eu-env-client',
    });
    await ref.close();
  });

  it('stops the boot with one error naming the account and every bad key', async () => {
    restore = withEnv({ PAYMENT_EU_ENVIRONMENT: 'staging', PAYMENT_EU_CLIENT_SECRET: 'never-print-me' });
    const error = await bootError([PaymentModule.forRoot({ account: 'eu' })]);
    expect(error.account).toBe('eu');
    expect(error.message).toContain("account 'eu'");
    expect(error.problems.map((p) => p.split(' ')[0])).toEqual(['PAYMENT_EU_BASE_URL', 'PAYMENT_EU_ENVIRONMENT', 'PAYMENT_EU_CLIENT_ID']);
    expect(error.message).not.toContain('never-print-me');
  });

  it('names the default account too: beside named accounts, its boot error says whose it is', async () => {
    restore = withEnv({});
    const error = await bootError([
      PaymentModule.forRoot({ account: 'eu', baseUrl: 'https://eu.example.com', readEnv: false }),
      PaymentModule.forRootAsync({ readEnv: false, useFactory: () => ({ clientId: 'x', clientSecret: 'never-print-me' }) }),
    ]);
    expect(error.account).toBe('default');
    expect(error.message).toMatch(/^PaymentModule configuration of the default account is invalid \(1 problem\):\n  - option 'baseUrl' is required/);
    expect(error.message).not.toContain('never-print-me');
  });

  it('names the default variable too when a shared setting may come from it (the one the operator set)', async () => {
    restore = withEnv({ PAYMENT_EU_BASE_URL: 'https://eu.example.com', PAYMENT_REDIS_URL: 'redis://h:99999' });
    const error = await bootError([PaymentModule.forRoot({ account: 'eu' })]);
    expect(error.problems).toEqual([expect.stringMatching(/^PAYMENT_EU_REDIS_URL \(or PAYMENT_REDIS_URL\) \(option 'redisUrl'\)/)]);
  });

  it("a bare '%' in a Redis URL's password is a boot error naming the account and the key, not ioredis' 'URI malformed'", async () => {
    restore = withEnv({});
    const url = 'redis://:s3cr3t%zz@127.0.0.1:6390/0';
    const store = new MemoryWebhookEventStore();
    for (const [key, options] of [
      ['redisUrl', { redisUrl: url }],
      // the queue's URL too (ioredis' error blamed the store there)
      ['queueRedisUrl', { store, processing: 'queue', queueRedisUrl: url }],
    ] as const) {
      const error = await bootError([PaymentModule.forRoot({ account: 'eu', baseUrl: 'https://eu.example.com', readEnv: false, ...options })]);
      expect(error.account).toBe('eu');
      expect(error.message).toContain("account 'eu'");
      expect(error.problems).toEqual([`option '${key}' has a '%' not followed by two hex digits in its password: percent-encode '%' as %25`]);
      expect(error.message).not.toContain('s3cr3t');
    }
    await store.close();
  });

  it('refuses a duplicate account name, two names reading the same variables, and two accounts on one path', async () => {
    restore = withEnv({});
    const base = { baseUrl: 'https://pay.example.com', webhookSecret: 'whsec_x' };
    @Module({ imports: [PaymentModule.forRoot({ ...base, account: 'eu' })] })
    class First {}
    @Module({ imports: [PaymentModule.forRoot({ ...base, account: 'eu' })] })
    class Second {}
    expect((await bootError([First, Second])).message).toContain("account 'eu' is registered twice");
    expect((await bootError([PaymentModule.forRoot(base), PaymentModule.forRoot(base)])).message).toContain(
      "account 'default' is registered twice",
    );
    expect((await bootError([PaymentModule.forRoot({ ...base, account: 'eu-west' }), PaymentModule.forRoot({ ...base, account: 'eu_west' })])).message).toContain(
      "accounts 'eu-west' and 'eu_west' would both read PAYMENT_EU_WEST_BASE_URL",
    );
    // one account's variable is another's: 'eu' reads PAYMENT_EU_QUEUE_REDIS_URL as its queue URL, 'eu-queue' as its Redis URL
    expect((await bootError([PaymentModule.forRoot({ ...base, account: 'eu' }), PaymentModule.forRoot({ ...base, account: 'eu-queue' })])).message).toContain(
      "accounts 'eu' and 'eu-queue' would both read PAYMENT_EU_QUEUE_REDIS_URL",
    );
    const samePath = await bootError([
      PaymentModule.forRoot({ ...base, account: 'eu', webhookPath: 'hooks' }),
      PaymentModule.forRoot({ ...base, account: 'us', webhookPath: '/hooks/' }),
    ]);
    expect(samePath.message).toContain("accounts 'eu' and 'us' both receive webhooks on '/hooks'");
    // Express matches paths without case: the default account would take eu's deliveries
    const caseOnly = await bootError([PaymentModule.forRoot({ ...base, webhookPath: 'payments/EU/webhook' }), PaymentModule.forRoot({ ...base, account: 'eu' })]);
    expect(caseOnly.message).toContain("both receive webhooks on '/payments/eu/webhook'");
  });

  it('warns at boot when two accounts accept the same webhook secret (each would take the other\'s deliveries)', async () => {
    restore = withEnv({});
    const warnings = async (euSecret: string) => {
      const logger = new CollectingLogger();
      const ref = await Test.createTestingModule({
        imports: [
          PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', webhookSecret: 'whsec_default,whsec_old' }),
          PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', account: 'eu', webhookSecret: euSecret }),
        ],
      })
        .setLogger(logger)
        .compile();
      await ref.close();
      return logger.lines.filter((l) => l.level === 'warn' && l.context === 'PaymentWebhooks').map((l) => l.message);
    };
    expect(await warnings('whsec_eu,whsec_old')).toEqual([
      expect.stringMatching(/^Accounts 'default' and 'eu' accept the same webhook secret: a delivery signed for one passes the other's route/),
    ]);
    expect((await warnings('whsec_eu,whsec_old')).join()).not.toContain('whsec_');
    expect(await warnings('whsec_eu')).toEqual([]);
  });

  it('warns once at boot about a PAYMENT_* variable no account reads (a typo would leave its setting at the default)', async () => {
    restore = withEnv({ PAYMENT_EU_WEBHOOK_SECRETS: 'whsec_never_logged', PAYMENT_EU_BASE_URL: 'https://pay.example.com', PAYMENT_SHOP_NAME: 'ours' });
    const logger = new CollectingLogger();
    const ref = await Test.createTestingModule({
      imports: [PaymentModule.forRoot({ baseUrl: 'https://pay.example.com' }), PaymentModule.forRoot({ account: 'eu' })],
    })
      .setLogger(logger)
      .compile();
    await ref.init();
    await ref.close();
    const lines = logger.lines.filter((l) => l.context === 'PaymentModule' && l.level === 'warn').map((l) => l.message);
    expect(lines).toEqual([
      "Environment variable PAYMENT_EU_WEBHOOK_SECRETS is not one nestjs-payment-gateway reads (accounts: default, eu); did you mean 'PAYMENT_EU_WEBHOOK_SECRET'?",
    ]);
    expect(logger.rendered.join('\n')).not.toContain('whsec_never_logged');
  });

  it("account 'default' is the unnamed account (PAYMENT_* variables, the class token), as every other API names it", async () => {
    restore = withEnv({ PAYMENT_BASE_URL: 'https://default.example.com' });
    const ref = await boot([PaymentModule.forRoot({ account: 'default' }), PaymentModule.forRoot({ account: 'eu', baseUrl: 'https://eu.example.com' })]);
    try {
      expect(ref.get(PaymentGatewayService).toJSON()).toMatchObject({ apiBaseUrl: 'https://default.example.com/sandbox/api/v1' });
      expect(ref.get(getPaymentGatewayToken('default'))).toBe(ref.get(PaymentGatewayService));
      expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('default')).account).toBe('default');
    } finally {
      await ref.close();
    }
    // and it is the same account as an unnamed forRoot(): two of them are the duplicate they look like
    const twice = await bootError([PaymentModule.forRoot({ baseUrl: 'https://a.example.com' }), PaymentModule.forRoot({ account: 'default', baseUrl: 'https://b.example.com' })]);
    expect(twice.message).toMatch(/default/);
  });

  it('refuses an invalid account name at forRoot()', () => {
    for (const name of ['', 'eu:west', 'eu west', '-eu', 'x'.repeat(65)]) {
      expect(() => PaymentModule.forRoot({ account: name })).toThrow(PaymentConfigurationError);
    }
  });

  it('an account that is no string is named by its type only: an object given by mistake may hold secrets', () => {
    const settings = { name: 'eu', clientSecret: 'cs_live_never_print_me' };
    const calls = [
      () => PaymentModule.forRoot({ account: settings as never }),
      () => PaymentModule.forRootAsync({ account: settings as never, useFactory: () => ({}) }),
      () => OnPaymentEvent('payment.succeeded', { account: settings as never }),
    ];
    for (const call of calls) {
      let error: Error | undefined;
      try {
        call();
      } catch (e) {
        error = e as Error;
      }
      expect(error).toBeInstanceOf(PaymentConfigurationError);
      expect(error!.message).toContain('account of type object must be a string');
      expect(error!.message).not.toContain('never_print_me');
    }
  });

  it('one error for every problem of the call itself: a bad account name beside a bad extra, a second factory beside a typo', () => {
    const problemsOf = (call: () => unknown): string[] => {
      try {
        call();
      } catch (e) {
        return (e as PaymentConfigurationError).problems;
      }
      throw new Error('no error');
    };
    expect(problemsOf(() => PaymentModule.forRoot({ account: 'eu west', webhookRoute: 'false' as never }))).toEqual([
      expect.stringContaining("option 'webhookRoute'"),
      expect.stringContaining(`PaymentModule.forRoot(): account "eu west" must be`),
    ]);
    const factory = () => ({});
    class Factory {
      createPaymentOptions() {
        return {};
      }
    }
    expect(problemsOf(() => PaymentModule.forRootAsync({ useFactory: factory, useClass: Factory, isGlobl: true } as never))).toEqual([
      expect.stringContaining('forRootAsync() takes one of useFactory, useClass or useExisting, not useFactory and useClass'),
      expect.stringContaining("forRootAsync() option 'isGlobl' is unknown; did you mean 'isGlobal'?"),
    ]);
    // and the async call is named as such
    expect(problemsOf(() => PaymentModule.forRootAsync({ account: 'queue', useFactory: factory }))).toEqual([
      expect.stringMatching(/^PaymentModule\.forRootAsync\(\): account 'queue' would read PAYMENT_QUEUE_\* variables/),
    ]);
  });

  it("refuses a name that is 'default' in another letter case: beside the unnamed account it would be a second account that events, handlers and logs tell apart by case alone", () => {
    for (const account of ['DEFAULT', 'Default']) {
      expect(() => PaymentModule.forRoot({ account, baseUrl: 'https://pay.example.com' })).toThrow(
        new RegExp(`account '${account}' is the default account's name in other letters: name it 'default' \\(or leave it unnamed\\), or choose another name`),
      );
    }
    // the exact name is the unnamed account
    expect(() => PaymentModule.forRoot({ account: 'default', baseUrl: 'https://pay.example.com' })).not.toThrow();
  });

  it('forRootAsync() reads an account given by a getter (a class instance), as forRoot() does', async () => {
    restore = withEnv({});
    class EuOptions {
      get account(): string {
        return 'eu';
      }
      useFactory = () => ({ baseUrl: 'https://eu.example.com' });
    }
    const moduleRef = await Test.createTestingModule({ imports: [PaymentModule.forRootAsync(new EuOptions() as never)] }).compile();
    try {
      expect(moduleRef.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu')).baseUrl).toBe('https://eu.example.com');
    } finally {
      await moduleRef.close();
    }
  });

  it.each([
    ['queue', 'PAYMENT_QUEUE_REDIS_URL'],
    ['webhook', 'PAYMENT_WEBHOOK_SECRET'],
    ['Redis', 'PAYMENT_REDIS_URL'],
    ['client', 'PAYMENT_CLIENT_SECRET'],
  ])("refuses account '%s', whose variables would include the default account's %s", (name, taken) => {
    let error: PaymentConfigurationError | undefined;
    try {
      PaymentModule.forRoot({ account: name });
    } catch (e) {
      error = e as PaymentConfigurationError;
    }
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    expect(error!.message).toContain(taken);
    // names that only look alike stay allowed
    expect(() => PaymentModule.forRoot({ account: `${name}s` })).not.toThrow();
  });

  it('refuses a handler bound to an account no module registers', async () => {
    restore = withEnv({});
    @Injectable()
    class Misbound {
      @OnPaymentEvent('payment.succeeded', { account: 'eu' })
      handle(): void {}
    }
    const error = await bootError([PaymentModule.forRoot({ baseUrl: 'https://pay.example.com' })], [Misbound]);
    expect(error.message).toContain("Misbound.handle is bound to account 'eu'");
    expect(error.message).toContain('registered: default');
  });
});
