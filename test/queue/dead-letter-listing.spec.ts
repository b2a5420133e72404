// The dead-letter page walk on a real redis-server, with a step of 2 entries per call so that
// every page crosses calls: foreign failed jobs are neither returned nor counted in offset and
// limit, and an id met twice (a failure recorded between two calls shifts the ranks) comes once.
import { Redis } from 'ioredis';
import { deadLetterPage } from '../../lib/queue/dead-letter-listing.js';
import { paymentEventJobId } from '../../lib/queue/payment-event-job.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';

describe('deadLetterPage', () => {
  let server: TestRedisServer;
  let redis: Redis;
  const failedKey = 'listing:failed';
  /** The failed set, newest first: module jobs d0…d4 with foreign jobs between them. */
  const newestFirst = ['f0', 'd0', 'f1', 'f2', 'd1', 'd2', 'f3', 'f4', 'f5', 'd3', 'd4', 'f6'];
  // half the foreign ids start as the module's do: the shape, not the prefix, tells them apart
  const id = (name: string) => (name.startsWith('d') ? paymentEventJobId('default', `evt_${name}`) : `${Number(name.slice(1)) % 2 === 0 ? 'evt-' : ''}foreign-${name}`);

  beforeAll(async () => {
    server = await startRedisServer();
    redis = new Redis(server.url);
    // scores are failure times: the first entry is the newest
    await redis.zadd(failedKey, ...newestFirst.flatMap((name, i) => [1000 - i, id(name)]));
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  const page = (offset: number, limit: number, step = 2) => deadLetterPage(redis, { failedKey, offset, limit, step });
  const dead = (...names: string[]) => names.map(id);

  it('pages over the module jobs only, across calls', async () => {
    expect(await page(0, 2)).toEqual(dead('d0', 'd1'));
    expect(await page(2, 2)).toEqual(dead('d2', 'd3'));
    expect(await page(4, 2)).toEqual(dead('d4'));
    expect(await page(5, 2)).toEqual([]);
    expect(await page(0, 10)).toEqual(dead('d0', 'd1', 'd2', 'd3', 'd4'));
    expect(await page(1, 3, 1000)).toEqual(dead('d1', 'd2', 'd3'));
  });

  it('counts an id once when a failure recorded between two calls shifts it into the next call', async () => {
    const shifting = {
      calls: 0,
      status: 'ready',
      eval: async (...args: Parameters<Redis['eval']>) => {
        // after the first call, a newer failure arrives: every rank moves down by one
        if (shifting.calls++ === 1) await redis.zadd(failedKey, 2000, 'foreign-newer');
        return redis.eval(...args);
      },
    };
    try {
      expect(await deadLetterPage(shifting as never, { failedKey, offset: 0, limit: 3, step: 2 })).toEqual(dead('d0', 'd1', 'd2'));
      await redis.zrem(failedKey, 'foreign-newer');
      // an id skipped before the shift is not taken after it either
      shifting.calls = 0;
      expect(await deadLetterPage(shifting as never, { failedKey, offset: 2, limit: 2, step: 2 })).toEqual(dead('d2', 'd3'));
    } finally {
      await redis.zrem(failedKey, 'foreign-newer');
    }
  });
});
