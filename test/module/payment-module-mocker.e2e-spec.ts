import 'reflect-metadata';
import { Global, Injectable, type INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ModuleMocker } from 'jest-mock';
import { PAYMENT_CLIENT_RUNTIME, PaymentGatewayService, PaymentModule } from '../../lib/index.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { envelope, postWebhook, RecordingHandlers, WEBHOOK_SECRET } from '../support/webhooks-app.js';

// Test.createTestingModule().useMocker() fills every dependency Nest cannot find, optional ones too:
// the module's optional ConfigService, EventEmitter2 and PAYMENT_CLIENT_RUNTIME meet the test's mocks.

/** A class the app needs and the test leaves to the mocker. */
class Mailer {
  send(): void {}
}

@Injectable()
class Orders {
  constructor(readonly mailer: Mailer) {}
}

const moduleMocker = new ModuleMocker(globalThis);

/** Nest's documented mocker (jest-mock's ModuleMocker): an automock of each class token, methods that return nothing. */
function automock(token: unknown): unknown {
  if (typeof token !== 'function') return undefined;
  const Mock = moduleMocker.generateFromMetadata(moduleMocker.getMetadata(token)!) as unknown as new () => unknown;
  return new Mock();
}

/** A "mock every token" mocker (createMock-style): each property a function returning nothing, deep. */
function deepMock(): unknown {
  const fn = () => undefined;
  return new Proxy(fn, { get: (target, key) => (key === 'then' ? undefined : key in target ? (target as never)[key] : deepMock()) });
}

async function appWith(mocker: (token: unknown) => unknown, options: Record<string, unknown>, logger?: CollectingLogger): Promise<INestApplication> {
  @Module({ imports: [PaymentModule.forRoot({ webhookSecret: WEBHOOK_SECRET, ...options })], providers: [Orders, RecordingHandlers] })
  class AppModule {}
  const builder = Test.createTestingModule({ imports: [AppModule] }).useMocker(mocker as never);
  if (logger !== undefined) builder.setLogger(logger);
  const ref = await builder.compile();
  const app = ref.createNestApplication({ rawBody: true, logger: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

const urlOf = (app: INestApplication) => `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;

describe('PaymentModule in a testing module with useMocker()', () => {
  it("Nest's documented automock: webhooks are handled (the module does not take a mocked EventEmitter2)", async () => {
    const app = await appWith(automock, { baseUrl: 'http://127.0.0.1:9' });
    try {
      const event = envelope();
      const answer = await postWebhook(urlOf(app), event);
      expect([answer.status, answer.json]).toEqual([200, { received: true }]);
      expect(app.get(RecordingHandlers).calls.filter((call) => call.handler === 'payment.*')).toHaveLength(1);
      expect(app.get(Orders).mailer).toBeDefined(); // the mocker's
      // the runtime token the mocker gave nothing for: the system clock
      expect(app.get(PaymentGatewayService)).toBeInstanceOf(PaymentGatewayService);
    } finally {
      await app.close();
    }
  });

  it('a mocked ConfigService that hides PAYMENT_BASE_URL: the boot error comes after a warning saying why the variable set is not read', async () => {
    const saved = process.env.PAYMENT_BASE_URL;
    process.env.PAYMENT_BASE_URL = 'http://127.0.0.1:9';
    const logger = new CollectingLogger();
    try {
      const error = await appWith(automock, {}, logger).catch((e: unknown) => e);
      expect(String(error)).toMatch(/PAYMENT_BASE_URL \(option 'baseUrl'\) is required/);
      expect(logger.messages('warn')).toContainEqual(
        expect.stringMatching(/^Account 'default': PAYMENT_BASE_URL is set in process\.env, but the app's ConfigService returns nothing for it.*useMocker\(\)/),
      );
    } finally {
      if (saved === undefined) delete process.env.PAYMENT_BASE_URL;
      else process.env.PAYMENT_BASE_URL = saved;
    }
  });

  it('a mocker that mocks every token (PAYMENT_CLIENT_RUNTIME too) stops the boot naming the token, not every client call later', async () => {
    const error = await appWith(() => deepMock(), { baseUrl: 'http://127.0.0.1:9' }).catch((e: unknown) => e);
    expect(String(error)).toMatch(/The PAYMENT_CLIENT_RUNTIME given to PaymentGatewayService is not a Partial<PaymentClientRuntime>.*useMocker/);
  });

  it.each([
    ['throws', () => { throw new Error('clock not started'); }],
    ['answers NaN', () => Number.NaN],
  ])('a test clock of its own whose now() %s until the test starts it still boots: only a mock that answers nothing is refused', async (_label, beforeStart) => {
    let started = false;
    let readsBeforeStart = 0;
    const now = () => (started ? Date.now() : (readsBeforeStart++, beforeStart()));
    const clock = { now, sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)) };
    @Global()
    @Module({ providers: [{ provide: PAYMENT_CLIENT_RUNTIME, useValue: { clock } }], exports: [PAYMENT_CLIENT_RUNTIME] })
    class ClockModule {}
    const ref = await Test.createTestingModule({ imports: [ClockModule, PaymentModule.forRoot({ baseUrl: 'http://127.0.0.1:9', webhookRoute: false })] }).compile();
    try {
      started = true;
      expect(ref.get(PaymentGatewayService)).toBeInstanceOf(PaymentGatewayService);
      expect(readsBeforeStart).toBeGreaterThan(0); // the client was given this clock
    } finally {
      await ref.close();
    }
  });
});
