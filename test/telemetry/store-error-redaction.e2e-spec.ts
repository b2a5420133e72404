// A custom store's errors may quote the URL its driver was given, credentials and all: the module
// cannot know that URL, so every URL's user and password are cut from what it logs and traces.
import 'reflect-metadata';
import { MemoryWebhookEventStore } from '../../lib/stores/memory-webhook-event.store.js';
import type { WebhookClaimResult } from '../../lib/stores/webhook-event-store.interface.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { disableOtelGlobals, registerTestOtel, telemetryTexts, type TestOtel } from '../support/otel-sdk.js';
import { ADAPTERS, envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

/** A store whose backend fails, saying so with its connection URL (password `hunter2`, one with an `@`). */
class LeakyStore extends MemoryWebhookEventStore {
  failClaims = 0;
  failReleases = 0;
  override async claim(key: string, leaseMs: number): Promise<WebhookClaimResult> {
    if (this.failClaims-- > 0) throw new Error('connect ECONNREFUSED redis://app:hunter2@db.internal:6379/0 (claim)');
    return super.claim(key, leaseMs);
  }
  override async release(key: string, claimToken: string): Promise<void> {
    if (this.failReleases-- > 0) throw new Error('write failed on rediss://:p@ss@hunter2@cache:6380');
    return super.release(key, claimToken);
  }
}

describe.each(ADAPTERS)('store errors quoting a URL with credentials, on %s', (adapter) => {
  let otel: TestOtel;
  let w: WebhookApp;
  beforeAll(() => disableOtelGlobals());
  afterEach(async () => {
    await w?.close();
    await otel?.reset();
  });

  it('never reach a log line, a span or a metric with the password; the rest of the reason stays', async () => {
    otel = await registerTestOtel();
    const logger = new CollectingLogger();
    const store = new LeakyStore();
    w = await startWebhookApp({ adapter, logger, payment: { store } });
    store.failClaims = 1;
    expect(await postWebhook(w.url, envelope())).toMatchObject({ status: 503 });
    w.handlers.failNext = 1;
    store.failReleases = 1;
    expect(await postWebhook(w.url, envelope())).toMatchObject({ status: 500 });
    const texts = [...telemetryTexts(await otel.collect(), otel.spans()), ...logger.rendered].join('\n');
    expect(texts).toContain('redis://[redacted]@db.internal:6379/0');
    expect(texts).toContain('rediss://[redacted]@cache:6380');
    expect(texts).not.toMatch(/hunter2|p@ss/);
  });
});
