import { randomUUID } from 'node:crypto';
import { errorMessage } from '../common/error-message.util.js';
import { withTimeout } from '../common/promise-timeout.util.js';
import { redactRedisUrl, redisErrorDescriber } from '../config/redact-url.js';
import {
  closeRedisClient,
  createFailFastRedisClient,
  DEFAULT_REDIS_OPERATION_TIMEOUT_MS,
  notConnectedReason,
  type RedisClientLike,
  REDIS_HEALTH_KEY_TTL_MS,
  REDIS_HEALTH_WRITE_SCRIPT,
  redisErrorCause,
  untilFirstConnected,
} from './redis-client.js';
import { PROCESSED_VALUE, registerProcessedMarks } from './redis-processed-mark.js';
import { WebhookStoreUnavailableError } from './webhook-event-store.errors.js';
import type { WebhookClaimResult, WebhookEventStore } from './webhook-event-store.interface.js';
import { assertDuration, assertKey, assertToken } from './webhook-event-store.validation.js';
import { PaymentLogger } from '../common/payment-logger.util.js';

/** @publicApi */
export interface RedisWebhookEventStoreOptions {
  /** Prefix of every key this store writes. @default 'payment-gateway:webhook:' */
  keyPrefix?: string;
  /**
   * Longest wait for one store operation (and for the first connection) before it
   * fails with `WebhookStoreUnavailableError`. @default 2000
   */
  operationTimeoutMs?: number;
  /**
   * With a client passed in: the URL it was made from, so the store's errors and log lines
   * never print its password (a store made from a URL knows it already).
   */
  redactUrl?: string;
}

export const DEFAULT_REDIS_KEY_PREFIX = 'payment-gateway:webhook:';

// Claim in one round trip: take the key if free, else say who holds it.
// 1 = claimed, 2 = processed, 3 = in flight. The key holding this very claim's token means
// it already ran: its reply was lost with the connection and ioredis sent it again.
const CLAIM_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if v == '${PROCESSED_VALUE}' then return 2 end
return 3`;

// Mark processed if the key is still ours, or free again (our lease ran out and
// nobody took over: the handlers did run, so remember it). Leave another
// holder's live claim and an existing 'processed' alone.
const COMPLETE_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or not v then
  redis.call('SET', KEYS[1], '${PROCESSED_VALUE}', 'PX', ARGV[2])
  return 1
end
return 0`;

// Delete only our own claim.
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

// Renew our own claim; take the key back when it is free (the lease lapsed in a pause and nobody
// claimed it, or a Redis restart without persistence lost it): its handlers are still running, so a
// copy must keep getting 409. Another holder's claim and 'processed' are left alone.
const EXTEND_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`;

// Read-only: 1 when the key is marked processed (for a client without \`get\`; a plain GET is
// the same read without running Lua, on the queue route's every delivery).
const IS_PROCESSED_SCRIPT = `return redis.call('GET', KEYS[1]) == '${PROCESSED_VALUE}' and 1 or 0`;

/** Releases kept for a reconnect at most (see `#releaseWhenBack`). */
const MAX_RELEASES_WHEN_BACK = 10_000;

/** Connections whose outage a store has logged (the stores of several accounts may share one): one line per outage. */
const outageLoggedOn = new WeakSet<RedisClientLike>();
/** Open stores per connection: once the last closes, a store made later on it logs an outage under way. */
const openStoresOn = new WeakMap<RedisClientLike, number>();

/** Connections whose server's eviction policy was read (see `#checkEvictionPolicy`). */
const evictionPolicyChecked = new WeakSet<RedisClientLike>();

/**
 * Store shared by every instance of an app, in Redis. Claims are atomic
 * (`SET NX PX` inside a script), complete/release are owner-checked scripts, and
 * lease and retention are plain key expiries, so nothing needs sweeping.
 *
 * When Redis cannot be reached every method rejects quickly with
 * `WebhookStoreUnavailableError` (the webhook route answers 503, the service
 * retries): commands are not queued while disconnected, and the client keeps
 * reconnecting in the background.
 * @publicApi
 */
export class RedisWebhookEventStore implements WebhookEventStore {
  readonly keyPrefix: string;
  readonly #client: RedisClientLike;
  readonly #ownsClient: boolean;
  readonly #timeoutMs: number;
  readonly #logger = new PaymentLogger('RedisWebhookEventStore');
  /** An error's message without the URL's password, for messages this store prints. */
  readonly #describe: (error: unknown) => string;
  /** ` (<redacted URL>)` in the outage lines, so an operator knows which Redis; empty for a client given without one. */
  readonly #where: string;
  #everReady = false;
  #closed = false;
  /** Releases of timed-out claims that found the connection down, by claim token: sent once it is back (see `claim`). */
  readonly #releasesWhenBack = new Map<string, { key: string; until: number }>();

  /**
   * @param connection a Redis URL (`redis://[:password@]host:port/db`), or an
   *   ioredis client you own. A client you pass is never closed by the store;
   *   create it with `enableOfflineQueue: false` so commands fail fast while
   *   Redis is down (the operation timeout bounds them in any case).
   */
  constructor(connection: string | RedisClientLike, options: RedisWebhookEventStoreOptions = {}) {
    const url = typeof connection === 'string' ? connection : options.redactUrl;
    this.#describe = url ? redisErrorDescriber(url) : errorMessage;
    this.#where = url ? ` (${redactRedisUrl(url)})` : '';
    this.keyPrefix = options.keyPrefix ?? DEFAULT_REDIS_KEY_PREFIX;
    this.#timeoutMs = options.operationTimeoutMs ?? DEFAULT_REDIS_OPERATION_TIMEOUT_MS;
    assertDuration('operationTimeoutMs', this.#timeoutMs);
    if (typeof connection === 'string') {
      if (connection.length === 0) throw new TypeError('RedisWebhookEventStore: the Redis URL is empty');
      this.#client = createFailFastRedisClient(connection, this.#timeoutMs);
      this.#ownsClient = true;
    } else if (connection && typeof connection.eval === 'function') {
      this.#client = connection;
      this.#ownsClient = false;
    } else {
      throw new TypeError('RedisWebhookEventStore: pass a Redis URL or an ioredis client');
    }
    openStoresOn.set(this.#client, (openStoresOn.get(this.#client) ?? 0) + 1);
    // a subclass may keep its marks otherwise: only this class's layout is read by the queue itself
    if (new.target === RedisWebhookEventStore) registerProcessedMarks(this, this.#client, this.keyPrefix);
    this.#client.on('ready', this.#onReady);
    this.#client.on('error', this.#onError);
    if (this.#client.status === 'ready') {
      this.#everReady = true;
      this.#checkEvictionPolicy();
    }
  }

  async claim(key: string, leaseMs: number): Promise<WebhookClaimResult> {
    assertKey(key);
    assertDuration('leaseMs', leaseMs);
    const claimToken = randomUUID();
    let code: unknown;
    try {
      code = await this.#run('claim', CLAIM_SCRIPT, this.keyPrefix + key, claimToken, leaseMs);
    } catch (error) {
      // A command that timed out is not withdrawn: a Redis that hung (not down) runs the claim
      // when it wakes, and the event would answer 409 for a whole lease though nothing runs
      // it. The release goes right behind it on the same connection (a no-op if it never ran);
      // with the connection down it goes once it is back, as the claim may have run before it broke.
      this.release(key, claimToken).catch(() => this.#releaseWhenBack(key, claimToken, leaseMs));
      throw error;
    }
    if (code === 1) return { outcome: 'claimed', claimToken };
    if (code === 2) return { outcome: 'processed' };
    return { outcome: 'in-flight' };
  }

  /** Like the memory store: also marks a key nobody holds any more (see COMPLETE_SCRIPT). */
  async complete(key: string, claimToken: string, retentionMs: number): Promise<void> {
    assertKey(key);
    assertToken(claimToken);
    assertDuration('retentionMs', retentionMs);
    await this.#run('complete', COMPLETE_SCRIPT, this.keyPrefix + key, claimToken, retentionMs);
  }

  async release(key: string, claimToken: string): Promise<void> {
    assertKey(key);
    assertToken(claimToken);
    await this.#run('release', RELEASE_SCRIPT, this.keyPrefix + key, claimToken);
  }

  async extend(key: string, claimToken: string, leaseMs: number): Promise<boolean> {
    assertKey(key);
    assertToken(claimToken);
    assertDuration('leaseMs', leaseMs);
    return (await this.#run('extend', EXTEND_SCRIPT, this.keyPrefix + key, claimToken, leaseMs)) === 1;
  }

  /**
   * Health check: writes `<keyPrefix>health` (expiring after 10 s), so a Redis that refuses
   * writes is down too; rejects with `WebhookStoreUnavailableError` like every operation.
   */
  async ping(): Promise<void> {
    await this.#run('write its health key', REDIS_HEALTH_WRITE_SCRIPT, `${this.keyPrefix}health`, REDIS_HEALTH_KEY_TTL_MS);
  }

  /** Whether `key` is marked processed; never claims it. */
  async isProcessed(key: string): Promise<boolean> {
    assertKey(key);
    const client = this.#client;
    if (typeof client.get === 'function') {
      return (await this.#send('read', () => client.get!(this.keyPrefix + key))) === PROCESSED_VALUE;
    }
    return (await this.#run('read', IS_PROCESSED_SCRIPT, this.keyPrefix + key)) === 1;
  }

  /** Quits the connection if this store opened it; a client passed in is left open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const open = (openStoresOn.get(this.#client) ?? 1) - 1;
    openStoresOn.set(this.#client, open);
    if (open === 0) outageLoggedOn.delete(this.#client);
    this.#client.removeListener('ready', this.#onReady);
    this.#releasesWhenBack.clear();
    if (!this.#ownsClient) {
      this.#client.removeListener('error', this.#onError);
      return;
    }
    await closeRedisClient(this.#client, this.#timeoutMs);
  }

  /** Never exposes the URL (it may carry a password). */
  toJSON(): Record<string, unknown> {
    return { store: 'redis', keyPrefix: this.keyPrefix, status: this.#client.status };
  }

  readonly #timedOut = (): Error => new WebhookStoreUnavailableError(`Redis did not answer within ${this.#timeoutMs} ms`);

  #run(op: string, script: string, key: string, ...args: (string | number)[]): Promise<unknown> {
    return this.#send(op, () => this.#client.eval(script, 1, key, ...args));
  }

  async #send(op: string, command: () => Promise<unknown>): Promise<unknown> {
    if (this.#closed) throw new WebhookStoreUnavailableError('The Redis webhook event store is closed');
    try {
      await this.#ensureConnected();
      return await withTimeout(command(), this.#timeoutMs, this.#timedOut);
    } catch (error) {
      if (error instanceof WebhookStoreUnavailableError) throw error;
      throw new WebhookStoreUnavailableError(
        `Redis webhook event store could not ${op}: ${this.#describe(error)}`,
        { cause: redisErrorCause(error, this.#describe) },
      );
    }
  }

  /**
   * Only the first connection is waited for (a webhook may arrive while the app
   * is still connecting); after an outage, calls fail at once until the client
   * has reconnected.
   */
  async #ensureConnected(): Promise<void> {
    const status = this.#client.status;
    if (status === 'ready') return;
    if (this.#everReady || (status !== 'wait' && status !== 'connecting' && status !== 'connect')) {
      throw new WebhookStoreUnavailableError(notConnectedReason(this.#client, this.#describe));
    }
    // one shared wait per client, however many calls arrive before the first connection
    const wait = await untilFirstConnected(this.#client, this.#timeoutMs);
    switch (wait.outcome) {
      case 'ready':
        return;
      case 'ended':
        throw new WebhookStoreUnavailableError('Redis connection ended');
      case 'timeout':
        throw new WebhookStoreUnavailableError(`Redis not ready after ${this.#timeoutMs} ms`);
      case 'error':
        throw new WebhookStoreUnavailableError(`Redis unavailable: ${this.#describe(wait.cause)}`, { cause: redisErrorCause(wait.cause, this.#describe) });
    }
  }

  readonly #onReady = (): void => {
    if (outageLoggedOn.delete(this.#client)) this.#logger.log(`Redis connection restored${this.#where}`);
    this.#everReady = true;
    this.#checkEvictionPolicy();
    // after what a client of the host's own sends again on its reconnect (a claim among them)
    if (this.#releasesWhenBack.size > 0) setImmediate(this.#sendReleasesWhenBack);
  };

  /** Until the claim's lease lapses by itself; a bounded number (an outage under a flood lets the rest lapse). */
  #releaseWhenBack(key: string, claimToken: string, leaseMs: number): void {
    if (this.#closed || this.#releasesWhenBack.size >= MAX_RELEASES_WHEN_BACK) return;
    this.#releasesWhenBack.set(claimToken, { key, until: Date.now() + leaseMs });
  }

  readonly #sendReleasesWhenBack = (): void => {
    for (const [claimToken, { key, until }] of this.#releasesWhenBack) {
      this.#releasesWhenBack.delete(claimToken);
      if (until <= Date.now() || this.#closed) continue;
      // connection gone again: kept for the next reconnect
      this.release(key, claimToken).catch(() => this.#releaseWhenBack(key, claimToken, until - Date.now()));
    }
  };

  /**
   * Once per connection, at its first. The store's keys have a TTL, so a Redis that evicts when
   * full (any policy but `noeviction`; `volatile-*` ones pick exactly such keys) may forget
   * processed ids early, and a late copy of such an event runs again: said at start, as BullMQ
   * does for its queues. Silent when `CONFIG` is not allowed (common on managed Redis).
   */
  #checkEvictionPolicy(): void {
    // once per connection, which the stores of several accounts may share
    if (evictionPolicyChecked.has(this.#client)) return;
    evictionPolicyChecked.add(this.#client);
    const client = this.#client as RedisClientLike & { config?: (...args: string[]) => Promise<unknown> };
    if (typeof client.config !== 'function') return;
    client.config('GET', 'maxmemory-policy').then(
      (reply) => {
        const policy: unknown = Array.isArray(reply) ? reply[1] : undefined;
        if (typeof policy !== 'string' || policy === 'noeviction' || this.#closed) return;
        this.#logger.warn(
          `Redis maxmemory-policy is ${policy}: once Redis is full it may evict processed webhook ids (they have a TTL), ` +
            'and a late copy of such an event would run its handlers again. Use noeviction on the store\'s Redis',
        );
      },
      () => undefined,
    );
  }

  // Without an 'error' listener ioredis prints every reconnect failure itself; log once per
  // outage of the connection, however many accounts' stores share it.
  readonly #onError = (error: unknown): void => {
    if (outageLoggedOn.has(this.#client) || this.#closed) return;
    outageLoggedOn.add(this.#client);
    this.#logger.warn(`Redis unavailable${this.#where}: what needs the webhook event store (deliveries, queued events) waits or is refused until it returns: ${this.#describe(error)}`);
  };
}
