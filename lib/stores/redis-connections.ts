import { inspect, type InspectOptions } from 'node:util';
import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { closeRedisClient, createFailFastRedisClient, type RedisClientLike } from './redis-client.js';

const ignoreError = (): void => undefined;

interface SharedConnection {
  readonly key: string;
  readonly client: RedisClientLike;
  readonly timeoutMs: number;
  /** Stores and queues holding it (see `acquire`). */
  users: number;
}

/**
 * The app's Redis connections for the webhook event stores and queues, one per URL and
 * time-out: accounts on the same Redis share a connection (their keys are namespaced by
 * prefix and account) unless they asked for different `redisTimeoutMs`.
 *
 * Each connection counts its users and closes when the last one releases it (from its own
 * shutdown hook). Nest's shutdown order cannot be relied on here: it shuts a global account
 * module down after this module, and its store records the completion of deliveries that
 * finish during shutdown well after this module's own hook ran.
 */
@Injectable()
export class PaymentRedisConnections implements OnApplicationShutdown {
  private readonly connections = new Map<string, SharedConnection>();
  private readonly byClient = new Map<RedisClientLike, SharedConnection>();

  /** Number of open connections (one per distinct URL and time-out). */
  get size(): number {
    return this.connections.size;
  }

  /**
   * The connection to `url` whose commands fail after `timeoutMs`, opened on first use. The
   * caller is counted as a user until it calls `release` with it.
   */
  acquire(url: string, timeoutMs: number): RedisClientLike {
    // a URL never contains a space, so this key cannot be ambiguous
    const key = `${timeoutMs} ${url}`;
    let entry = this.connections.get(key);
    if (entry === undefined) {
      const client = createFailFastRedisClient(url, timeoutMs);
      // Users (stores, queues) listen while they use it and report outages through the Nest
      // logger. A connection attempt still under way when they let go (at shutdown, Redis
      // refusing the password) fails later: without a listener ioredis prints that to stderr.
      client.on('error', ignoreError);
      entry = { key, client, timeoutMs, users: 0 };
      this.connections.set(key, entry);
      this.byClient.set(client, entry);
    }
    entry.users++;
    return entry.client;
  }

  /**
   * `use(client)` with the connection to `url` acquired for it (see `acquire`): a `use` that
   * throws lets go of it at once, so a failed construction never keeps a connection open.
   */
  acquireFor<T>(url: string, timeoutMs: number, use: (client: RedisClientLike) => T): { value: T; client: RedisClientLike } {
    const client = this.acquire(url, timeoutMs);
    try {
      return { value: use(client), client };
    } catch (error) {
      void this.release(client);
      throw error;
    }
  }

  /** One user of `client` less; the connection closes with its last user. Safe for a client it does not know. */
  async release(client: RedisClientLike): Promise<void> {
    const entry = this.byClient.get(client);
    if (entry === undefined) return;
    entry.users--;
    if (entry.users > 0) return;
    this.forget(entry);
    await closeRedisClient(entry.client, entry.timeoutMs);
  }

  /** How many connections, never their URLs (they hold the passwords). */
  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentRedisConnections', { connections: this.connections.size }, depth, options);
  }

  /**
   * Closes the connections nobody holds; those still held close when their last user releases
   * them (a store of a module Nest shuts down later may still record completions).
   */
  async onApplicationShutdown(): Promise<void> {
    const idle = [...this.connections.values()].filter((entry) => entry.users <= 0);
    for (const entry of idle) this.forget(entry);
    await Promise.all(idle.map(({ client, timeoutMs }) => closeRedisClient(client, timeoutMs)));
  }

  private forget(entry: SharedConnection): void {
    this.connections.delete(entry.key);
    this.byClient.delete(entry.client);
  }
}
