import 'reflect-metadata';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { type QueueApp, startQueueApp, waitFor } from '../support/queue-app.js';
import { envelope, postWebhook } from '../support/webhooks-app.js';

// Dead letters acted on from two sides at once: an admin's replay() and the service's copy of the
// same event, an admin's list() and replays. One attempt per event, so a replayed event waits
// for its last attempt at once (the case where an acknowledged copy could be lost).
describe('queue mode: dead letters under concurrent actions (one attempt per event)', () => {
  let redis: TestRedisServer;
  let q: QueueApp;

  beforeAll(async () => {
    redis = await startRedisServer();
    q = await startQueueApp(redis.url, { payment: { queueAttempts: 1 } });
  });
  afterAll(async () => {
    await q?.close();
    await redis?.stop();
  });

  async function deadLetter(): Promise<{ event: Record<string, unknown>; id: string }> {
    const event = envelope('payment.succeeded');
    const id = event.eventId as string;
    q.handlers.failing.add(id);
    expect((await postWebhook(q.url, event)).status).toBe(200);
    await waitFor(`${id} is a dead letter`, async () => (await q.deadLetters.get(id)) !== undefined);
    return { event, id };
  }

  it('a copy racing an admin replay is never acknowledged beside it: either the copy replayed it (200) or it is answered 409', async () => {
    const outcomes: string[] = [];
    for (let round = 0; round < 6; round++) {
      const { event, id } = await deadLetter();
      const release = q.handlers.hold(id); // the replayed run waits: its one attempt is still ahead
      const [copy, replayed] = await Promise.all([postWebhook(q.url, event), q.deadLetters.replay(id)]);
      outcomes.push(`${copy.status} ${copy.json?.code ?? ''} replayed by admin: ${replayed}`);
      q.handlers.failing.delete(id);
      release();
      await waitFor(`${id} ran`, () => q.handlers.count('done', id) === 1);
    }
    // was "200  replayed by admin: true": the copy acknowledged, adding nothing, its event on its last attempt
    for (const outcome of outcomes) expect(outcome).toMatch(/^(200  replayed by admin: false|409 WEBHOOK_EVENT_IN_FLIGHT replayed by admin: true)$/);
  }, 60_000);

  it('list() never returns an event that is no longer a dead letter (replayed between its reads)', async () => {
    const letters = await Promise.all(Array.from({ length: 60 }, () => deadLetter()));
    for (const { id } of letters) q.handlers.failing.delete(id);
    const notDead = new Set<string>();
    let listing = true;
    const lister = (async () => {
      while (listing) {
        for (const letter of await q.deadLetters.list({ limit: 1000 })) if (letter.attempts === 0) notDead.add(letter.eventId);
      }
    })();
    await Promise.all(letters.map(({ id }) => q.deadLetters.replay(id)));
    listing = false;
    await lister;
    expect([...notDead]).toEqual([]);
    await waitFor('every replayed event ran', () => letters.every(({ id }) => q.handlers.count('done', id) === 1));
  }, 60_000);
});
