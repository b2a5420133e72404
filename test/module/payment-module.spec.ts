import 'reflect-metadata';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { inspect } from 'node:util';
import { join } from 'node:path';
import { Injectable, Module, SetMetadata } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { LazyModuleLoader } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { PAYMENT_MODULE_OPTIONS } from '../../lib/payment.constants.js';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import {
  PaymentConfigurationError,
  PaymentModule,
  getPaymentOptionsToken,
  InjectPaymentOptions,
  type PaymentModuleOptions,
  type PaymentOptionsFactory,
  type ResolvedPaymentOptions,
} from '../../lib/index.js';

const ENV_KEYS = ['PAYMENT_BASE_URL', 'PAYMENT_ENVIRONMENT', 'PAYMENT_CLIENT_ID', 'PAYMENT_CLIENT_SECRET', 'PAYMENT_HTTP_TIMEOUT_MS'];

function withEnv(values: Record<string, string>): () => void {
  const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  for (const k of ENV_KEYS) delete process.env[k];
  Object.assign(process.env, values);
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

async function resolvedFrom(module: Parameters<typeof Test.createTestingModule>[0]): Promise<ResolvedPaymentOptions> {
  const ref = await Test.createTestingModule(module).compile();
  try {
    return ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken(), { strict: false });
  } finally {
    await ref.close();
  }
}

/** What `build` throws (`undefined` when it does not). */
function thrownBy(build: () => unknown): unknown {
  try {
    build();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('PaymentModule configuration', () => {
  let restore: () => void;
  afterEach(() => restore?.());

  it('forRoot() with no argument reads PAYMENT_* from the process environment (no ConfigModule)', async () => {
    restore = withEnv({ PAYMENT_BASE_URL: 'https://pay.example.com', PAYMENT_ENVIRONMENT: 'live', PAYMENT_HTTP_TIMEOUT_MS: '2500' });
    const options = await resolvedFrom({ imports: [PaymentModule.forRoot()] });
    expect(options.apiBaseUrl).toBe('https://pay.example.com/api/v1');
    expect(options.httpTimeoutMs).toBe(2500);
  });

  it('explicit forRoot options override the environment', async () => {
    restore = withEnv({ PAYMENT_BASE_URL: 'https://pay.example.com', PAYMENT_ENVIRONMENT: 'live' });
    const options = await resolvedFrom({ imports: [PaymentModule.forRoot({ environment: 'sandbox' })] });
    expect(options.apiBaseUrl).toBe('https://pay.example.com/sandbox/api/v1');
  });

  it('works beside a host ConfigModule.forRoot() that loads its own values', async () => {
    restore = withEnv({});
    const options = await resolvedFrom({
      imports: [
        ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [() => ({ unrelated: 1 })] }),
        PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:1' }),
      ],
    });
    expect(options.baseUrl).toBe('http://127.0.0.1:1');
  });

  it("keeps the host's skipProcessEnv: the process's PAYMENT_* variables are not read, its ConfigService's values are", async () => {
    restore = withEnv({ PAYMENT_CLIENT_ID: 'from-process-env' });
    const options = await resolvedFrom({
      imports: [
        ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, skipProcessEnv: true, load: [() => ({ PAYMENT_BASE_URL: 'https://loaded.example.com' })] }),
        PaymentModule.forRoot(),
      ],
    });
    expect(options.baseUrl).toBe('https://loaded.example.com');
    expect(options.clientId).toBeUndefined();
  });

  it("forRootAsync() reads what an async load of the host's global ConfigModule gives, through the global ConfigService (as the README says: no ConfigModule in its imports)", async () => {
    restore = withEnv({});
    const options = await resolvedFrom({
      imports: [
        ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [async () => ({ payments: { url: 'https://async-load.example.com' } })] }),
        PaymentModule.forRootAsync({
          inject: [ConfigService],
          useFactory: (config: ConfigService): PaymentModuleOptions => ({ baseUrl: config.getOrThrow<string>('payments.url') }),
        }),
      ],
    });
    expect(options.baseUrl).toBe('https://async-load.example.com');
  });

  it("values of the host's ConfigService that are neither text, numbers nor booleans are refused naming their key, never read as text", async () => {
    restore = withEnv({});
    const boot = Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          load: [
            () => ({
              PAYMENT_BASE_URL: 'https://pay.example.com',
              PAYMENT_CLIENT_ID: 'shop',
              PAYMENT_CLIENT_SECRET: { nested: 'never-print-me' }, // was the secret '[object Object]'
              PAYMENT_WEBHOOK_SECRET: ['whsec_a', ''], // was 'whsec_a,', read as ['whsec_a']
              PAYMENT_WEBHOOK_PATH: Object.create(null), // was a bare TypeError naming nothing
            }),
          ],
        }),
        PaymentModule.forRoot(),
      ],
    }).compile();
    const error = (await boot.catch((e: unknown) => e)) as PaymentConfigurationError;
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    expect(error.problems.map((p) => p.split(' ')[0]).sort()).toEqual(['PAYMENT_CLIENT_SECRET', 'PAYMENT_WEBHOOK_PATH', 'PAYMENT_WEBHOOK_SECRET']);
    expect(error.message).not.toContain('never-print-me');
  });

  it("boots when a test fakes the ConfigService with only the methods its factory calls (getOrThrow): the variables then come from the process", async () => {
    restore = withEnv({ PAYMENT_CLIENT_ID: 'from-env', PAYMENT_CLIENT_SECRET: 'env-secret' });
    const values: Record<string, string> = { 'payments.url': 'https://faked.example.com' };
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true }),
        PaymentModule.forRootAsync({
          inject: [ConfigService],
          useFactory: (config: ConfigService): PaymentModuleOptions => ({ baseUrl: config.getOrThrow<string>('payments.url') }),
        }),
      ],
    })
      .overrideProvider(ConfigService)
      .useValue({ getOrThrow: (key: string) => values[key] })
      .compile();
    try {
      const options = moduleRef.get<ResolvedPaymentOptions>(getPaymentOptionsToken(), { strict: false });
      expect(options.baseUrl).toBe('https://faked.example.com');
      expect(options.clientId).toBe('from-env');
    } finally {
      await moduleRef.close();
    }
  });

  it('forRootAsync() with useFactory and inject', async () => {
    restore = withEnv({ PAYMENT_CLIENT_ID: 'from-env', PAYMENT_CLIENT_SECRET: 'env-secret' });
    const options = await resolvedFrom({
      imports: [
        PaymentModule.forRootAsync({
          imports: [ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => ({ pay: { url: 'https://async.example.com' } })] })],
          inject: [ConfigService],
          useFactory: (config: ConfigService): PaymentModuleOptions => ({ baseUrl: config.get<string>('pay.url') }),
        }),
      ],
    });
    expect(options.baseUrl).toBe('https://async.example.com');
    expect(options.clientId).toBe('from-env');
  });

  it('forRootAsync() with credentials read from secrets files: their trailing newline is not part of them', async () => {
    restore = withEnv({});
    const dir = mkdtempSync(join(tmpdir(), 'payment-secrets-'));
    try {
      writeFileSync(join(dir, 'client_id'), 'client-from-file\n');
      writeFileSync(join(dir, 'client_secret'), 'cs_from_file\n');
      const options = await resolvedFrom({
        imports: [
          PaymentModule.forRootAsync({
            useFactory: (): PaymentModuleOptions => ({
              baseUrl: 'https://pay.example.com',
              clientId: readFileSync(join(dir, 'client_id'), 'utf8'),
              clientSecret: readFileSync(join(dir, 'client_secret'), 'utf8'),
            }),
          }),
        ],
      });
      // before: 'cs_from_file\n' went to the token call, which the service refused as wrong credentials
      expect(options.clientId).toBe('client-from-file');
      expect(options.clientSecret).toBe('cs_from_file');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forRootAsync() with useClass, and readEnv: false ignores the environment', async () => {
    restore = withEnv({ PAYMENT_ENVIRONMENT: 'live' });
    @Injectable()
    class OptionsFactory implements PaymentOptionsFactory {
      createPaymentOptions(): PaymentModuleOptions {
        return { baseUrl: 'https://class.example.com' };
      }
    }
    const options = await resolvedFrom({ imports: [PaymentModule.forRootAsync({ useClass: OptionsFactory, readEnv: false })] });
    expect(options.baseUrl).toBe('https://class.example.com');
    expect(options.environment).toBe('sandbox');
  });

  it('options whose values are getters (a factory returning itself) are read; an array returned is refused as such', async () => {
    restore = withEnv({});
    @Injectable()
    class SelfFactory implements PaymentOptionsFactory {
      get baseUrl(): string {
        return 'https://getter.example.com';
      }
      get clientId(): string {
        return 'shop';
      }
      get clientSecret(): string {
        return 'cs_from_a_getter';
      }
      createPaymentOptions(): PaymentModuleOptions {
        return this;
      }
    }
    const options = await resolvedFrom({ imports: [PaymentModule.forRootAsync({ useClass: SelfFactory })] });
    expect([options.baseUrl, options.clientSecret]).toEqual(['https://getter.example.com', 'cs_from_a_getter']);
    await expect(resolvedFrom({ imports: [PaymentModule.forRootAsync({ useFactory: () => [] as never })] })).rejects.toThrow(
      'the options must be an object, not an array',
    );
    // options read through a proxy's get trap alone (a config library's view)
    const proxied = new Proxy({}, { get: (_t, key) => ({ baseUrl: 'https://proxy.example.com' })[key as 'baseUrl'] });
    expect((await resolvedFrom({ imports: [PaymentModule.forRootAsync({ useFactory: () => proxied })] })).baseUrl).toBe('https://proxy.example.com');
    // an own toJSON is an unknown option, refused as one
    await expect(resolvedFrom({ imports: [PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', toJSON: () => ({}) } as never)] })).rejects.toThrow(
      "option 'toJSON' is unknown",
    );
  });

  it('forRoot() reads options and extras given as getters (a settings class), as forRootAsync() does, over the environment', async () => {
    restore = withEnv({ PAYMENT_BASE_URL: 'https://from-env.example.com' });
    class Settings {
      get baseUrl(): string {
        return 'https://from-getter.example.com';
      }
      get httpTimeoutMs(): number {
        return 1234;
      }
    }
    const options = await resolvedFrom({ imports: [PaymentModule.forRoot(new Settings())] });
    expect([options.baseUrl, options.httpTimeoutMs]).toEqual(['https://from-getter.example.com', 1234]);
    class EuSettings extends Settings {
      get account(): string {
        return 'eu';
      }
    }
    const ref = await Test.createTestingModule({ imports: [PaymentModule.forRoot(new EuSettings())] }).compile();
    try {
      expect(ref.get<ResolvedPaymentOptions>(getPaymentOptionsToken('eu'), { strict: false }).account).toBe('eu');
    } finally {
      await ref.close();
    }
  });

  it('forRootAsync() given two sources of options (useFactory and useClass) is refused, not resolved from one of them', () => {
    class Factory implements PaymentOptionsFactory {
      createPaymentOptions(): PaymentModuleOptions {
        return { baseUrl: 'https://from-class.example.com' };
      }
    }
    // plain JavaScript (TypeScript refuses both calls: test/types/payment-module-async.types-check.ts)
    expect(() => PaymentModule.forRootAsync({ useFactory: () => ({ baseUrl: 'https://from-factory.example.com' }), useClass: Factory } as never)).toThrow(
      new PaymentConfigurationError(['forRootAsync() takes one of useFactory, useClass or useExisting, not useFactory and useClass'], 'default'),
    );
    expect(() => PaymentModule.forRootAsync({ account: 'eu', useClass: Factory, useExisting: Factory } as never)).toThrow(PaymentConfigurationError);
  });

  it('the options given to forRoot() are kept so that neither JSON, inspect nor a spread copy of them shows a secret', async () => {
    restore = withEnv({});
    const given = { baseUrl: 'https://pay.example.com', clientId: 'shop', clientSecret: 'cs_kept_hidden', webhookSecret: ['whsec_a', 'whsec_b'], redisUrl: 'redis://:pa55word@redis.internal:6379' };
    for (const module of [PaymentModule.forRoot(given), PaymentModule.forRootAsync({ useFactory: () => given })]) {
      const ref = await Test.createTestingModule({ imports: [module] }).compile();
      try {
        const kept = ref.get<Record<string, unknown>>(PAYMENT_MODULE_OPTIONS, { strict: false });
        expect(kept).not.toBe(given);
        const shown = [JSON.stringify(kept), inspect(kept, { depth: 5, showHidden: true }), JSON.stringify({ ...kept })].join('\n');
        for (const secret of ['cs_kept_hidden', 'whsec_a', 'whsec_b', 'pa55word']) expect(shown).not.toContain(secret);
        expect(JSON.parse(JSON.stringify(kept))).toMatchObject({ clientId: 'shop', clientSecret: '[redacted]', webhookSecret: ['[redacted]', '[redacted]'] });
      } finally {
        await ref.close();
      }
    }
  });

  it('forRootAsync() with useExisting: a factory another module provides', async () => {
    restore = withEnv({});
    @Injectable()
    class SharedOptionsFactory implements PaymentOptionsFactory {
      createPaymentOptions(): PaymentModuleOptions {
        return { baseUrl: 'https://existing.example.com', httpTimeoutMs: 1234 };
      }
    }
    @Module({ providers: [SharedOptionsFactory], exports: [SharedOptionsFactory] })
    class SettingsModule {}
    const options = await resolvedFrom({
      imports: [PaymentModule.forRootAsync({ imports: [SettingsModule], useExisting: SharedOptionsFactory })],
    });
    expect(options).toMatchObject({ baseUrl: 'https://existing.example.com', httpTimeoutMs: 1234 });
  });

  it('forRootAsync() refuses what it would drop: an option beside the factory, a misspelt extra; forRoot(null) is forRoot()', () => {
    const useFactory = () => ({ baseUrl: 'https://pay.example.com' });
    const error = thrownBy(() => PaymentModule.forRootAsync({ useFactory, reconcile: true, isGlobl: true, account: 'eu' } as never));
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    expect((error as PaymentConfigurationError).account).toBe('eu');
    expect((error as PaymentConfigurationError).problems).toEqual([
      "option 'reconcile' beside useFactory is not read: return it from the factory (or useClass's createPaymentOptions())",
      "forRootAsync() option 'isGlobl' is unknown; did you mean 'isGlobal'?",
    ]);
    expect(() => PaymentModule.forRootAsync({ useFactory, isGlobal: true, webhookRoute: false, inject: [], imports: [] })).not.toThrow();
    expect(() => PaymentModule.forRoot(null as never)).not.toThrow();
  });

  it('module extras of the wrong kind are one PaymentConfigurationError, on forRoot() and forRootAsync() alike', () => {
    const useFactory = () => ({ baseUrl: 'https://pay.example.com' });
    const wrong = { webhookDecorators: (() => undefined) as never, webhookImports: class AuthModule {} as never, webhookRoute: 'false' as never, isGlobal: 1 as never };
    const expected = [
      "option 'webhookDecorators' must be an array of decorators, e.g. [Public(), SkipThrottle()]",
      "option 'webhookImports' must be an array of modules",
      "option 'isGlobal' must be true or false",
      "option 'webhookRoute' must be true or false",
    ];
    for (const build of [() => PaymentModule.forRoot(wrong), () => PaymentModule.forRootAsync({ useFactory, ...wrong })]) {
      const error = thrownBy(build);
      // before: a bare "is not iterable" TypeError, and webhookRoute: 'false' kept the route
      expect(error).toBeInstanceOf(PaymentConfigurationError);
      expect([...(error as PaymentConfigurationError).problems].sort()).toEqual([...expected].sort());
      // no account given: the default account's, and the message says so
      expect((error as PaymentConfigurationError).account).toBe('default');
      expect((error as Error).message).toContain('PaymentModule configuration of the default account is invalid');
    }
  });

  it('a decorator factory given uncalled (Public, not Public()) is a PaymentConfigurationError naming the option and index, on either list', () => {
    const Public = () => SetMetadata('host:is-public', true);
    const useFactory = () => ({ baseUrl: 'https://pay.example.com' });
    const cases = [
      // was accepted: the method list dropped it silently (the host's guard then refused every delivery 403)
      { extras: { webhookDecorators: [Public(), Public as never] }, problem: "option 'webhookDecorators'[1]" },
      // was a bare TypeError at boot
      { extras: { webhookClassDecorators: [Public as never] }, problem: "option 'webhookClassDecorators'[0]" },
    ];
    for (const { extras, problem } of cases) {
      for (const build of [() => PaymentModule.forRoot({ account: 'eu', ...extras }), () => PaymentModule.forRootAsync({ account: 'eu', useFactory, ...extras })]) {
        const error = thrownBy(build);
        expect(error).toBeInstanceOf(PaymentConfigurationError);
        expect(error).toMatchObject({
          account: 'eu',
          problems: [`${problem} returned a function instead of applying itself: a decorator factory given uncalled? Call it (Public(), not Public)`],
        });
      }
    }
  });

  it("a misspelt extra given to forRoot() gets the suggestion forRootAsync() gives", async () => {
    restore = withEnv({});
    await expect(resolvedFrom({ imports: [PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', isGlobl: true } as never)] })).rejects.toThrow(
      "option 'isGlobl' is unknown; did you mean 'isGlobal'?",
    );
  });

  it('a factory that returns something other than an object is one clear boot error, not one per character', async () => {
    restore = withEnv({});
    await expect(resolvedFrom({ imports: [PaymentModule.forRootAsync({ useFactory: () => 'https://pay.example.com' as never })] })).rejects.toThrow(
      /the options must be an object, not string/,
    );
  });

  it('a factory that returns nothing (a missing return) is a boot error, never "the environment alone"', async () => {
    // before, the account booted on PAYMENT_* and the factory's settings (live!) were dropped without a word
    restore = withEnv({ PAYMENT_BASE_URL: 'https://env.example.com' });
    for (const result of [undefined, null]) {
      await expect(resolvedFrom({ imports: [PaymentModule.forRootAsync({ useFactory: () => result as never })] })).rejects.toThrow(
        `the options must be an object, not ${String(result)} (does the forRootAsync() factory return them?)`,
      );
    }
  });

  it('a factory that returns a built-in container of options (a Map) is a boot error, never "the environment alone"', async () => {
    // before, the Map's baseUrl was dropped and the account booted on PAYMENT_BASE_URL
    restore = withEnv({ PAYMENT_BASE_URL: 'https://env.example.com' });
    for (const [result, what] of [
      [new Map([['baseUrl', 'https://factory.example.com']]), 'a Map holding no option'],
      [new Set(['https://factory.example.com']), 'a Set holding no option'],
    ] as const) {
      await expect(resolvedFrom({ imports: [PaymentModule.forRootAsync({ useFactory: () => result as never })] })).rejects.toThrow(
        `the options must be an object, not ${what} (does the forRootAsync() factory return them?)`,
      );
    }
    // a class instance is options, its fields read as given (a proxy's get trap too), or all left to the env
    class PaymentSettings {
      readonly baseUrl = 'https://factory.example.com';
    }
    class LazySettings {}
    const proxied = new Proxy(new LazySettings(), { get: (target, key) => (key === 'baseUrl' ? 'https://proxy.example.com' : Reflect.get(target, key)) });
    for (const [result, baseUrl] of [
      [new PaymentSettings(), 'https://factory.example.com'],
      [proxied, 'https://proxy.example.com'],
      [new LazySettings(), 'https://env.example.com'],
    ] as const) {
      await expect(resolvedFrom({ imports: [PaymentModule.forRootAsync({ useFactory: () => result as never })] })).resolves.toMatchObject({ baseUrl });
    }
  });

  it('useClass and useExisting take any factory whose instance has createPaymentOptions(): an abstract token, an arrow field; others fail at boot', async () => {
    restore = withEnv({});
    abstract class PaymentSettings implements PaymentOptionsFactory {
      abstract createPaymentOptions(): PaymentModuleOptions;
    }
    @Injectable()
    class EnvPaymentSettings extends PaymentSettings {
      createPaymentOptions(): PaymentModuleOptions {
        return { baseUrl: 'https://abstract.example.com' };
      }
    }
    @Module({ providers: [{ provide: PaymentSettings, useClass: EnvPaymentSettings }], exports: [PaymentSettings] })
    class SettingsModule {}
    const fromAbstract = await resolvedFrom({ imports: [PaymentModule.forRootAsync({ imports: [SettingsModule], useExisting: PaymentSettings as never })] }); // (Nest's type wants a concrete class)
    expect(fromAbstract.baseUrl).toBe('https://abstract.example.com');

    @Injectable()
    class ArrowSettings implements PaymentOptionsFactory {
      createPaymentOptions = (): PaymentModuleOptions => ({ baseUrl: 'https://arrow.example.com' });
    }
    expect((await resolvedFrom({ imports: [PaymentModule.forRootAsync({ useClass: ArrowSettings })] })).baseUrl).toBe('https://arrow.example.com');

    class NotAFactory {}
    await expect(resolvedFrom({ imports: [PaymentModule.forRootAsync({ useClass: NotAFactory as never, account: 'eu' })] })).rejects.toThrow(
      /account 'eu'.*NotAFactory given as useClass has no createPaymentOptions\(\) method/s,
    );
  });

  it('a lazily loaded account with a webhook route is a clear error (its route would answer 404); without a route it loads', async () => {
    restore = withEnv({});
    const ref = await Test.createTestingModule({ imports: [PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', webhookSecret: 'whsec_default' })] }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    try {
      const loader = app.get(LazyModuleLoader);
      @Module({ imports: [PaymentModule.forRoot({ account: 'eu', baseUrl: 'https://eu.example.com', webhookSecret: 'whsec_eu' })] })
      class LazyEuModule {}
      const error = await loader.load(() => LazyEuModule).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentConfigurationError);
      expect((error as PaymentConfigurationError).message).toMatch(/account 'eu'.*loaded after the app started.*'\/payments\/eu\/webhook'.*webhookRoute: false/s);

      @Module({ imports: [PaymentModule.forRoot({ account: 'us', baseUrl: 'https://us.example.com', webhookSecret: 'whsec_us', webhookRoute: false })] })
      class LazyUsModule {}
      const us = await loader.load(() => LazyUsModule);
      expect(us.get<ResolvedPaymentOptions>(getPaymentOptionsToken('us'), { strict: false }).account).toBe('us');
    } finally {
      await app.close();
    }
  });

  it("a lazily loaded account's variables, called unread at start (a likely typo of another account's), are said to be its own once it loads", async () => {
    restore = withEnv({});
    const late = { PAYMENT_US_BASE_URL: 'https://us.example.com', PAYMENT_US_WEBHOOK_SECRET: 'whsec_us_never_logged' };
    Object.assign(process.env, late);
    const logger = new CollectingLogger();
    const ref = await Test.createTestingModule({ imports: [PaymentModule.forRoot({ account: 'eu', baseUrl: 'https://eu.example.com', webhookSecret: 'whsec_eu' })] }).compile();
    const app = ref.createNestApplication({ logger });
    try {
      await app.init();
      const said = (level: string) => logger.lines.filter((l) => l.context === 'PaymentModule' && l.level === level).map((l) => l.message);
      // a renaming to PAYMENT_EU_* would give account eu us's secret: the warning says when not to
      expect(said('warn')).toEqual([
        expect.stringMatching(/^Environment variable PAYMENT_US_BASE_URL .*did you mean 'PAYMENT_EU_BASE_URL'\? Unless/),
        expect.stringMatching(/^Environment variable PAYMENT_US_WEBHOOK_SECRET .*did you mean 'PAYMENT_EU_WEBHOOK_SECRET'\? Unless it is for an account registered after start .* PAYMENT_US_: then keep it$/),
      ]);
      @Module({ imports: [PaymentModule.forRoot({ account: 'us', webhookRoute: false })] })
      class LazyUsModule {}
      await app.get(LazyModuleLoader).load(() => LazyUsModule);
      expect(said('log')).toContainEqual(
        "Account 'us', loaded after start, reads PAYMENT_US_BASE_URL, PAYMENT_US_WEBHOOK_SECRET: the start-up warning about them no longer applies",
      );
      expect(logger.rendered.join('\n')).not.toContain('whsec_us_never_logged');
    } finally {
      await app.close();
      for (const name of Object.keys(late)) delete process.env[name];
    }
  });

  it('the start-up error of a missing base URL names a set variable that looks like its misspelling (the warning about them comes after start)', async () => {
    restore = withEnv({ PAYMENT_BASEURL: 'https://env.example.com', PAYMENT_EU_BASE_URL: 'https://eu.example.com', PAYMENT_US_BASE_URI: 'https://us.example.com' });
    const error = await resolvedFrom({ imports: [PaymentModule.forRoot()] }).catch((e: unknown) => e);
    expect((error as PaymentConfigurationError).problems).toEqual([
      'PAYMENT_BASE_URL (option \'baseUrl\') is required: the service base URL, e.g. https://payments.example.com; PAYMENT_BASEURL is set: a misspelling of PAYMENT_BASE_URL?',
    ]);
    const eu = await resolvedFrom({ imports: [PaymentModule.forRoot({ account: 'us' })] }).catch((e: unknown) => e);
    // PAYMENT_EU_BASE_URL is account eu's own variable, not a misspelling of us's
    expect((eu as PaymentConfigurationError).problems).toEqual([expect.stringMatching(/; PAYMENT_US_BASE_URI is set: a misspelling of PAYMENT_US_BASE_URL\?$/)]);
  });

  it('with readEnv: false an error names the option only: a variable is no way to fix it', async () => {
    restore = withEnv({ PAYMENT_BASE_URL: 'https://env.example.com' });
    const error = await resolvedFrom({ imports: [PaymentModule.forRoot({ readEnv: false })] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentConfigurationError);
    expect((error as PaymentConfigurationError).problems).toEqual([expect.stringMatching(/^option 'baseUrl' is required/)]);
  });

  it("@InjectPaymentOptions() injects the default account's resolved options, @InjectPaymentOptions(name) a named account's", async () => {
    restore = withEnv({});
    @Injectable()
    class OptionsReader {
      constructor(
        @InjectPaymentOptions() readonly defaults: ResolvedPaymentOptions,
        @InjectPaymentOptions('eu') readonly eu: ResolvedPaymentOptions,
      ) {}
    }
    const ref = await Test.createTestingModule({
      imports: [
        PaymentModule.forRoot({ baseUrl: 'https://pay.example.com' }),
        PaymentModule.forRoot({ account: 'eu', baseUrl: 'https://eu.pay.example.com', readEnv: false }),
      ],
      providers: [OptionsReader],
    }).compile();
    try {
      const reader = ref.get(OptionsReader);
      expect(reader.defaults).toMatchObject({ account: 'default', baseUrl: 'https://pay.example.com' });
      expect(reader.eu).toMatchObject({ account: 'eu', baseUrl: 'https://eu.pay.example.com' });
    } finally {
      await ref.close();
    }
  });

  it('isGlobal makes the providers visible to every module', async () => {
    restore = withEnv({});
    @Injectable()
    class Consumer {
      constructor() {}
    }
    @Module({ providers: [Consumer] })
    class FeatureModule {}
    const ref = await Test.createTestingModule({
      imports: [PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', isGlobal: true }), FeatureModule],
    }).compile();
    const fromFeature = ref.select(FeatureModule).get(getPaymentOptionsToken());
    expect(fromFeature.baseUrl).toBe('https://pay.example.com');
    await ref.close();
  });

  it('a bare imports: [PaymentModule] (without forRoot) is said once at boot; a forRoot() import says nothing', async () => {
    restore = withEnv({});
    @Module({ imports: [PaymentModule] })
    class FeatureModule {}
    const boot = async (imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>) => {
      const logger = new CollectingLogger();
      const ref = await Test.createTestingModule({ imports }).setLogger(logger).compile();
      await ref.close();
      return logger.lines.filter((l) => l.context === 'PaymentModule' && l.level === 'warn').map((l) => l.message);
    };
    expect(await boot([FeatureModule])).toEqual([expect.stringMatching(/^imports: \[PaymentModule\] without forRoot\(\) provides nothing/)]);
    // beside a global forRoot() too: the import still adds nothing
    expect(await boot([PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', isGlobal: true }), FeatureModule])).toHaveLength(1);
    expect(await boot([PaymentModule.forRoot({ baseUrl: 'https://pay.example.com' })])).toEqual([]);
    expect(await boot([PaymentModule.forRootAsync({ account: 'eu', useFactory: () => ({ baseUrl: 'https://eu.example.com' }) })])).toEqual([]);
  });

  it('a forRootAsync() factory that rejects fails the boot with its own error, without a warning to remove the import', async () => {
    restore = withEnv({});
    const logger = new CollectingLogger();
    const failing = PaymentModule.forRootAsync({
      useFactory: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        throw new Error('vault down');
      },
    });
    await expect(Test.createTestingModule({ imports: [failing] }).setLogger(logger).compile()).rejects.toThrow('vault down');
    expect(logger.lines.filter((l) => l.context === 'PaymentModule' && l.level === 'warn')).toEqual([]);
  });

  it('a live account on a plain http:// base URL to another machine is warned about at boot; https and loopback are not', async () => {
    restore = withEnv({});
    const warnings = async (baseUrl: string, environment: 'live' | 'sandbox' = 'live') => {
      const logger = new CollectingLogger();
      const ref = await Test.createTestingModule({ imports: [PaymentModule.forRoot({ baseUrl, environment })] }).setLogger(logger).compile();
      await ref.close();
      return logger.lines.filter((l) => l.level === 'warn' && l.context === 'PaymentGatewayService').map((l) => l.message);
    };
    expect(await warnings('http://pay.example.com')).toEqual([
      expect.stringMatching(/^Account 'default' is live but its base URL is plain http:\/\/ \(pay\.example\.com\): the client secret and bearer tokens travel unencrypted/),
    ]);
    expect(await warnings('https://pay.example.com')).toEqual([]);
    expect(await warnings('http://127.0.0.1:9')).toEqual([]);
    expect(await warnings('http://pay.example.com', 'sandbox')).toEqual([]);
  });

  it("a redisKeyPrefix that runs into the account name (another app's prefix and account could make its keys) is warned about at boot", async () => {
    restore = withEnv({});
    const warnings = async (options: Parameters<typeof PaymentModule.forRoot>[0]) => {
      const logger = new CollectingLogger();
      const ref = await Test.createTestingModule({ imports: [PaymentModule.forRoot({ baseUrl: 'https://pay.example.com', ...options })] })
        .setLogger(logger)
        .compile();
      await ref.close();
      return logger.lines.filter((l) => l.level === 'warn' && l.context === 'PaymentModule').map((l) => l.message);
    };
    const redisUrl = 'redis://127.0.0.1:1'; // never reached: the check is at boot
    expect(await warnings({ redisUrl, redisKeyPrefix: 'shop-', account: 'eu' })).toEqual([
      "Account 'eu': redisKeyPrefix 'shop-' ends with a character account names may have, so another app's prefix and account can " +
        "make the same Redis keys (prefix 'shop-e' with account 'u' makes the keys yours make, 'shop-' with 'eu'); end it with ':' ('shop-:')",
    ]);
    // the example is this app's own prefix and account, not a fixed one
    expect(await warnings({ redisUrl, redisKeyPrefix: 'shop' })).toEqual([
      expect.stringContaining("(prefix 'shopd' with account 'efault' makes the keys yours make, 'shop' with 'default')"),
    ]);
    // one letter: the other split (an account name cannot start with the prefix's '-')
    expect(await warnings({ redisUrl, redisKeyPrefix: 'shop1', account: 'x' })).toEqual([
      expect.stringContaining("(prefix 'shop' with account '1x' makes the keys yours make, 'shop1' with 'x')"),
    ]);
    expect(await warnings({ redisUrl, redisKeyPrefix: 'shop:' })).toEqual([]);
    expect(await warnings({ redisUrl })).toEqual([]); // the default ends with ':'
    expect(await warnings({ redisKeyPrefix: 'shop-' })).toEqual([]); // no Redis: the prefix is not used
    expect(await warnings({ redisUrl, redisKeyPrefix: 'shop-', store: new MemoryWebhookEventStore() })).toEqual([]); // nor with a store of your own
  });

  it('stops the app at boot with one error naming every bad key', async () => {
    restore = withEnv({ PAYMENT_ENVIRONMENT: 'staging', PAYMENT_CLIENT_SECRET: 'never-print-me' });
    const boot = Test.createTestingModule({ imports: [PaymentModule.forRoot()] }).compile();
    await expect(boot).rejects.toBeInstanceOf(PaymentConfigurationError);
    const error = (await boot.catch((e: unknown) => e)) as PaymentConfigurationError;
    expect(error.problems.map((p) => p.split(' ')[0])).toEqual(
      ['PAYMENT_BASE_URL', 'PAYMENT_ENVIRONMENT', 'PAYMENT_CLIENT_ID'],
    );
    expect(error.account).toBe('default');
    expect(error.message).toMatch(/^PaymentModule configuration of the default account is invalid \(3 problems\):\n  - PAYMENT_BASE_URL /);
    expect(error.message).not.toContain('never-print-me');
  });
});
