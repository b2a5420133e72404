// A signed event is never lost over a format detail, never fans out to wildcard listeners,
// never shares a store key with another id, never carries fields only the module sets, and
// is not dispatched to an account of the other environment.
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { ADAPTERS, envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';
import { CollectingLogger } from '../support/collecting-logger.js';

/** Host wildcard listeners: a signed `payment.*` or `**` must never reach them. */
@Injectable()
class WildcardListeners {
  readonly heard: string[] = [];

  @OnEvent('payment-gateway.**')
  everything(event: { eventType: string }): void {
    this.heard.push(event.eventType);
  }
}

describe.each(ADAPTERS)('signed-event fidelity on %s', (adapter) => {
  let w: WebhookApp;
  let logger: CollectingLogger;
  beforeAll(async () => {
    logger = new CollectingLogger();
    w = await startWebhookApp({
      adapter,
      logger,
      extraImports: [EventEmitterModule.forRoot({ wildcard: true })],
      extraProviders: [WildcardListeners],
    });
  });
  afterAll(async () => {
    await w?.close();
  });

  it.each([
    ['createdAt without a time zone', { createdAt: '2024-03-01T10:00:00' }],
    ['apiVersion that is not a calendar date', { apiVersion: '2024-02-30' }],
    ['no environment', { environment: undefined }],
    ['no createdAt', { createdAt: undefined }],
  ])('handles a signed event with %s (delivered as received)', async (_label, overrides) => {
    const body = envelope('payment.succeeded', overrides);
    expect(await postWebhook(w.url, body)).toMatchObject({ status: 200, json: { received: true } });
    expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
    const received = w.handlers.calls.find((c) => c.event.eventId === body.eventId)!.event as unknown as Record<string, unknown>;
    for (const [field, value] of Object.entries(overrides)) expect(received[field]).toBe(value);
  });

  it.each(['payment.*', '*.succeeded', '**', 'payment.succeeded.*'])(
    'refuses eventType %j before it can reach wildcard listeners',
    async (eventType) => {
      const listeners = w.app.get(WildcardListeners);
      const before = listeners.heard.length;
      const answer = await postWebhook(w.url, envelope('payment.succeeded', { eventType }));
      expect(answer).toMatchObject({ status: 400, json: { code: 'WEBHOOK_INVALID_ENVELOPE', errors: { eventType: expect.any(Array) } } });
      expect(listeners.heard.length).toBe(before);
    },
  );

  it('refuses eventIds that are not well-formed Unicode, so "evt\\ud800" and "evt\\udbff" never share a store key', async () => {
    for (const escaped of ['evt\\ud800', 'evt\\udbff']) {
      const text = JSON.stringify(envelope('payment.succeeded', { eventId: 'PLACEHOLDER' })).replace('PLACEHOLDER', escaped);
      const answer = await postWebhook(w.url, text);
      expect(answer).toMatchObject({ status: 400, json: { code: 'WEBHOOK_INVALID_ENVELOPE', errors: { eventId: expect.any(Array) } } });
    }
  });

  it('drops fields only the module sets (canonicalStatus, account, receivedAt) from the body before handlers see it', async () => {
    const body = envelope('payment.succeeded', { canonicalStatus: 'SUCCESS', account: 'someone-else', receivedAt: '1970-01-01' });
    expect((await postWebhook(w.url, body)).status).toBe(200);
    const event = w.handlers.calls.find((c) => c.event.eventId === body.eventId)!.event;
    expect(event.canonicalStatus).toBeUndefined();
    expect(event.account).toBe('default');
    expect(event.receivedAt).toBeInstanceOf(Date);
  });
});

describe.each(ADAPTERS)('warnings about signed events delivered as received on %s', (adapter) => {
  // an app and a logger of its own: the warnings are counted from zero
  let w: WebhookApp;
  const logger = new CollectingLogger();
  beforeAll(async () => {
    w = await startWebhookApp({ adapter, logger });
  });
  afterAll(async () => {
    await w?.close();
  });

  const kinds = {
    missing: { value: undefined, words: 'without' },
    malformed: { value: ' ', words: 'with an unexpected format of' },
    'not-a-string': { value: 20240301, words: 'with a non-string' },
  } as const;
  const cases = (['apiVersion', 'createdAt', 'environment'] as const).flatMap((field) =>
    (Object.keys(kinds) as (keyof typeof kinds)[]).map((kind) => [field, kind] as const),
  );

  it('warns once per field and kind, however many deliveries carry it, and handles each delivery', async () => {
    for (const [field, kind] of cases) {
      for (let copy = 0; copy < 3; copy++) {
        const body = envelope('payment.succeeded', { [field]: kinds[kind].value });
        expect((await postWebhook(w.url, body)).status).toBe(200);
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
      }
    }
    const warnings = logger.messages('warn');
    for (const [field, kind] of cases) {
      const line = `A signed webhook of account default arrived ${kinds[kind].words} ${field};`;
      expect(warnings.filter((message) => message.startsWith(line))).toHaveLength(1);
    }
    expect(warnings).toHaveLength(cases.length);
  });
});

describe.each(ADAPTERS)('environment of signed events on %s', (adapter) => {
  it.each([
    ['live', 'sandbox', true],
    ['live', 'staging', true],
    ['live', 'production', false],
    ['sandbox', 'production', true],
    ['sandbox', 'sandbox', false],
    ['sandbox', 'staging', false],
    ['live', undefined, false],
    // a format detail, not another environment: blank is as missing, case and spaces do not count
    ['live', '', false],
    ['live', ' Production ', false],
    ['sandbox', 'PRODUCTION', true],
  ] as const)('a %s account given environment %j: ignored with 2xx = %s', async (environment, eventEnvironment, ignored) => {
    const logger = new CollectingLogger();
    const w = await startWebhookApp({ adapter, logger, payment: { environment } });
    try {
      const body = envelope('payment.succeeded', { environment: eventEnvironment });
      const answer = await postWebhook(w.url, body);
      expect(answer.status).toBe(200);
      if (ignored) {
        expect(answer.json).toEqual({ received: true, ignored: 'environment' });
        expect(w.handlers.calls).toHaveLength(0);
        const warning = logger.messages('warn').find((m) => m.includes(`Ignored payment.succeeded event ${body.eventId as string}`));
        // signed with the account's own secret: the line says which setting to check
        expect(warning).toContain(
          environment === 'sandbox'
            ? "Check the setting: if the account is live, set PAYMENT_ENVIRONMENT=live (option environment: 'live')"
            : 'Check the setting: if the account really is live, this is a sandbox event sent to its URL',
        );
        // a retry of it is acknowledged the same way, never dispatched
        expect((await postWebhook(w.url, body)).json).toEqual({ received: true, ignored: 'environment' });
      } else {
        expect(answer.json).toEqual({ received: true });
        expect(w.handlers.count('payment.*', body.eventId as string)).toBe(1);
      }
    } finally {
      await w.close();
    }
  });
});
