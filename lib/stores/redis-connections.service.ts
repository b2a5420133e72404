import { inspect, type InspectOptions } from 'node:util';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { closeRedisClient, createFailFastRedisClient, type RedisClientLike, startConnecting } from './redis-client.js';

const ignoreError = (): void => undefined;

interface SharedConnection {
  readonly key: string;
  readonly client: RedisClientLike;
  readonly timeoutMs: number;
  /** Stores and queues holding it (see `acquireFor`). */
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
 *
 * Nor does Nest run any hook for an app whose creation failed (a host provider that throws
 * after the stores were built), so no socket is opened before the modules are initialised:
 * a connection made while the app's providers are created connects in `onModuleInit`.
 */
@Injectable()
export class PaymentRedisConnections implements OnModuleInit {
  private readonly connections = new Map<string, SharedConnection>();
  /** Whether the app got past creating its providers: from then on a connection opens when it is made. */
  private initialised = false;

  onModuleInit(): void {
    this.initialised = true;
    for (const entry of this.connections.values()) startConnecting(entry.client);
  }

  /** Number of open connections (one per distinct URL and time-out). */
  get size(): number {
    return this.connections.size;
  }

  /**
   * `use(client, release)` with the connection to `url` whose commands fail after `timeoutMs`
   * (opened on first use), and the `release` that lets go of it: what `use` built counts as a
   * user until then, and the connection closes with its last user. A `use` that throws lets go at once, so
   * a failed construction never keeps a connection open.
   */
  acquireFor<T>(url: string, timeoutMs: number, use: (client: RedisClientLike, release: () => Promise<void>) => T): { value: T; client: RedisClientLike; release: () => Promise<void> } {
    const entry = this.acquire(url, timeoutMs);
    let released = false;
    const release = async (): Promise<void> => {
      if (released) return; // a user counts once, however often its release runs
      released = true;
      await this.release(entry);
    };
    try {
      return { value: use(entry.client, release), client: entry.client, release };
    } catch (error) {
      void release();
      throw error;
    }
  }

  private acquire(url: string, timeoutMs: number): SharedConnection {
    // a URL never contains a space, so this key cannot be ambiguous
    const key = `${timeoutMs} ${url}`;
    let entry = this.connections.get(key);
    if (entry === undefined) {
      const client = createFailFastRedisClient(url, timeoutMs, true);
      // Stores listen while they use it, and the route reports queue outages as they happen,
      // through the Nest logger. A connection attempt still under way when they let go (at shutdown, Redis
      // refusing the password) fails later: without a listener ioredis prints that to stderr.
      client.on('error', ignoreError);
      entry = { key, client, timeoutMs, users: 0 };
      this.connections.set(key, entry);
      if (this.initialised) startConnecting(client);
    }
    entry.users++;
    return entry;
  }

  /** One user of `entry` less; the connection closes with its last user. */
  private async release(entry: SharedConnection): Promise<void> {
    entry.users--;
    if (entry.users > 0) return;
    this.connections.delete(entry.key);
    await closeRedisClient(entry.client, entry.timeoutMs);
  }

  /** How many connections, never their URLs (they hold the passwords); `inspect` and JSON loggers alike. */
  toJSON(): Record<string, unknown> {
    return { connections: this.connections.size };
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentRedisConnections', this.toJSON(), depth, options);
  }
}
