// A store given in forRoot({ store }) is the host's: app.close() leaves it open, as the README's
// "Writing your own store" says (the host closes it, its own connections with it).
import 'reflect-metadata';
import type { WebhookClaimResult, WebhookEventStore } from '../../lib/stores/webhook-event-store.interface.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { readmeSection } from '../support/readme.js';
import { envelope, postWebhook, startWebhookApp } from '../support/webhooks-app.js';

/** The README's minimal custom store, with a `close()` that records the call. */
class HostStore implements WebhookEventStore {
  private readonly rows = new Map<string, string>();
  private tokens = 0;
  closed = false;

  async claim(key: string): Promise<WebhookClaimResult> {
    const row = this.rows.get(key);
    if (row === 'processed') return { outcome: 'processed' };
    if (row !== undefined) return { outcome: 'in-flight' };
    const claimToken = `t${++this.tokens}`;
    this.rows.set(key, claimToken);
    return { outcome: 'claimed', claimToken };
  }
  async complete(key: string, claimToken: string): Promise<void> {
    if (this.rows.get(key) === claimToken || !this.rows.has(key)) this.rows.set(key, 'processed');
  }
  async release(key: string, claimToken: string): Promise<void> {
    if (this.rows.get(key) === claimToken) this.rows.delete(key);
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

describe('a custom store passed to forRoot({ store })', () => {
  it('is used for deliveries and left open by app.close(): the host closes it', async () => {
    const store = new HostStore();
    const app = await startWebhookApp({ adapter: 'express', payment: { store } });
    const event = envelope();
    expect((await postWebhook(app.url, event)).json).toEqual({ received: true });
    expect((await postWebhook(app.url, event)).json).toEqual({ received: true, duplicate: true });
    await app.close();
    expect(store.closed).toBe(false);
  });

  it.each([
    ['false (a SET NX boolean)', false, 'false'],
    ["an outcome of the store's own", { outcome: 'busy' }, 'an object with outcome "busy"'],
    ['a claim without its token', { outcome: 'claimed' }, "{ outcome: 'claimed' } without a claimToken string"],
  ])('whose claim() resolves %s runs no handler and answers 500, naming what it got', async (_label, answer, named) => {
    const store = Object.assign(new HostStore(), { claim: async () => answer as never });
    const logger = new CollectingLogger();
    const app = await startWebhookApp({ adapter: 'express', payment: { store }, logger });
    try {
      const event = envelope();
      const reply = await postWebhook(app.url, event);
      expect([reply.status, reply.json?.code]).toEqual([500, 'WEBHOOK_INTERNAL_ERROR']);
      expect(app.handlers.calls).toEqual([]);
      expect(logger.rendered.join('\n')).toContain(`WebhookEventStore: claim() resolved ${named}, not { outcome: 'claimed', claimToken }`);
    } finally {
      await app.close();
    }
  });

  it('the README says so where it describes close()', () => {
    const section = readmeSection('### Writing your own store');
    expect(section).not.toMatch(/`close\(\)` \(called at shutdown\)/);
    expect(section).toMatch(/`forRoot\(\{ store \}\)` is yours to close/);
  });
});
