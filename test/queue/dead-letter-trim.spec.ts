import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { trimExpiredDeadLetters } from '../../lib/queue/dead-letter-trim.js';
import { PAYMENT_EVENT_JOB_ID_PREFIX, paymentEventJobId } from '../../lib/queue/payment-event-job.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// The trim of dead letters, on failed jobs made by real BullMQ: each job is removed by its own
// finishedOn and retention only, and every Redis call looks at a bounded number of jobs.
describe('dead-letter trim', () => {
  let redis: TestRedisServer;
  let client: Redis;
  let queue: Queue;
  let worker: Worker;
  const prefix = 'trim';
  const name = 'default';
  const failedKey = `${prefix}:${name}:failed`;
  const jobKeyPrefix = `${prefix}:${name}:`;
  const HOUR = 3_600_000;

  beforeAll(async () => {
    redis = await startRedisServer();
    client = new Redis(redis.url);
    queue = new Queue(name, { connection: { url: redis.url }, prefix });
    worker = new Worker(
      name,
      async (): Promise<void> => {
        throw new Error('always failing');
      },
      { connection: { url: redis.url }, prefix, concurrency: 10 },
    );
  });
  afterAll(async () => {
    await worker?.close();
    await queue?.close();
    client?.disconnect();
    await redis?.stop();
  });

  /** The job id of a job named `name` here: the module's shape, except another producer's (`theirs-…`, `evt-theirs-…`). */
  const names = new Map<string, string>();
  const jobId = (name: string): string => {
    const id = name.includes('theirs') ? name : paymentEventJobId('default', name);
    names.set(id, name);
    return id;
  };
  /** Adds jobs that fail at once (one attempt, never removed by BullMQ) and waits until they are in the failed set. */
  async function failed(jobNames: string[], opts: Record<string, unknown>): Promise<void> {
    const ids = jobNames.map(jobId);
    for (const id of ids) await queue.add('evt', { id }, { jobId: id, attempts: 1, removeOnFail: false, ...opts });
    await waitFor(`${jobNames.join(', ')} failed`, async () => (await Promise.all(ids.map((id) => client.zscore(failedKey, id)))).every((s) => s !== null));
  }
  const finishedOn = async (name: string) => Number(await client.hget(jobKeyPrefix + jobId(name), 'finishedOn'));
  /** The names of the jobs in the failed set. */
  const failedIds = async () => (await client.zrange(failedKey, '0', '-1')).map((id) => names.get(id) ?? id).sort();
  const trim = (now: number, batch: number, maxBatches = 100) =>
    trimExpiredDeadLetters(client, { failedKey, jobKeyPrefix, fallbackRetentionMs: 10 * HOUR, jobIdPrefix: PAYMENT_EVENT_JOB_ID_PREFIX, batch, maxBatches, timeoutMs: 2000, now: () => now });

  it("removes each failed job by its own finishedOn and retention, walking past older ones that are kept, in bounded steps", async () => {
    // the oldest ones are kept a day: a walk that stopped at them would never reach the rest
    await failed(['day-1', 'day-2', 'day-3', 'day-4', 'day-5'], { paymentDeadLetterRetentionMs: 24 * HOUR });
    await failed(['hour-1', 'hour-2'], { paymentDeadLetterRetentionMs: HOUR });
    await failed(['age-2h'], { removeOnFail: { age: 7200 } }); // a job queued with BullMQ's age: seconds
    await failed(['none'], {}); // no retention of its own: the instance's (10 h here)
    const first = await finishedOn('day-1');
    const ageAt = await finishedOn('age-2h');

    // an hour after the first failure nothing has passed its own retention (the hour-jobs failed later)
    expect(await trim(first + HOUR - 1, 3)).toBe(0);
    expect(await failedIds()).toHaveLength(9);

    // two hours after the age-based one failed: the hour-jobs' retention passed, its own not yet (strictly after)
    expect(await trim(ageAt + 2 * HOUR, 3)).toBe(2);
    expect(await failedIds()).toEqual(['age-2h', 'day-1', 'day-2', 'day-3', 'day-4', 'day-5', 'none']);
    // removed with their hashes, as BullMQ removes a job
    expect(await client.exists(jobKeyPrefix + jobId('hour-1'), jobKeyPrefix + jobId('hour-2'))).toBe(0);
    expect(await queue.getJob(jobId('hour-1'))).toBeUndefined();

    expect(await trim(ageAt + 2 * HOUR + 1, 3)).toBe(1);
    expect(await trim((await finishedOn('none')) + 10 * HOUR + 1, 3)).toBe(1); // no retention of its own: the fallback
    expect(await failedIds()).toEqual(['day-1', 'day-2', 'day-3', 'day-4', 'day-5']);
  });

  it("never removes another producer's failed job (an id not of the module's shape, even one starting evt-), and walks past it to the module's", async () => {
    await client.del(failedKey);
    // another producer's, in the account's queue: no retention of ours
    await failed(['theirs-1', 'evt-theirs-2', `evt-theirs-${'x'.repeat(37)}!`], {});
    await failed(['evt-1', 'evt-2'], { paymentDeadLetterRetentionMs: HOUR });
    const muchLater = (await finishedOn('evt-2')) + 100 * HOUR;
    // was 5, then 4: the instance's fallback retention (10 h here) removed the other producer's jobs too
    expect(await trim(muchLater, 1, 100)).toBe(2);
    expect(await failedIds()).toEqual(['evt-theirs-2', `evt-theirs-${'x'.repeat(37)}!`, 'theirs-1']);
    expect(await client.exists(jobKeyPrefix + 'theirs-1', jobKeyPrefix + 'evt-theirs-2')).toBe(2);
  });

  it('looks at no more than batch × maxBatches jobs in one trim; the next trim goes on', async () => {
    await client.del(failedKey);
    await failed(['a-1', 'a-2', 'a-3', 'a-4', 'a-5', 'a-6', 'a-7'], { paymentDeadLetterRetentionMs: 1000 });
    const later = Math.max(...(await Promise.all((await failedIds()).map(finishedOn)))) + 2000;
    expect(await trim(later, 2, 2)).toBe(4);
    expect(await failedIds()).toHaveLength(3);
    expect(await trim(later, 2, 2)).toBe(3);
    expect(await failedIds()).toEqual([]);
  });

  it('leaves jobs younger than the shortest retention without reading them, and jobs in other states alone', async () => {
    await failed(['young'], { paymentDeadLetterRetentionMs: 1000 });
    await queue.add('evt', { id: 'waiting' }, { jobId: jobId('waiting'), delay: HOUR, paymentDeadLetterRetentionMs: 1000 } as never);
    const young = await finishedOn('young');
    expect(await trim(young + 999, 10)).toBe(0);
    expect(await trim(young + 1001, 10)).toBe(1);
    expect(await queue.getJob(jobId('waiting'))).toBeDefined();
    expect(await queue.getJobState(jobId('waiting'))).toBe('delayed');
  });
});
