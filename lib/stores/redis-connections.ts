import { inspect, type InspectOptions } from 'node:util';
import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { inspectSummary } from '../common/inspect-summary.util.js';
import { closeRedisClient, createFailFastRedisClient, type RedisClientLike } from './redis-client.js';

const ignoreError = (): void => undefined;

/**
 * The app's Redis connections for the webhook event stores and queues, one per URL and
 * time-out: accounts on the same Redis share a connection (their keys are namespaced by
 * prefix and account) unless they asked for different `redisTimeoutMs`. Closed at
 * application shutdown, after the stores stopped using them.
 */
@Injectable()
export class PaymentRedisConnections implements OnApplicationShutdown {
  private readonly clients = new Map<string, { client: RedisClientLike; timeoutMs: number }>();

  /** Number of open connections (one per distinct URL and time-out). */
  get size(): number {
    return this.clients.size;
  }

  /** The connection to `url` whose commands fail after `timeoutMs`. */
  client(url: string, timeoutMs: number): RedisClientLike {
    // a URL never contains a space, so this key cannot be ambiguous
    const key = `${timeoutMs} ${url}`;
    let entry = this.clients.get(key);
    if (entry === undefined) {
      const client = createFailFastRedisClient(url, timeoutMs);
      // Users (stores, queues) listen while they use it and report outages through the Nest
      // logger. A connection attempt still under way when they let go (at shutdown, Redis
      // refusing the password) fails later: without a listener ioredis prints that to stderr.
      client.on('error', ignoreError);
      entry = { client, timeoutMs };
      this.clients.set(key, entry);
    }
    return entry.client;
  }

  /** How many connections, never their URLs (they hold the passwords). */
  [inspect.custom](depth: number, options: InspectOptions): string {
    return inspectSummary('PaymentRedisConnections', { connections: this.clients.size }, depth, options);
  }

  async onApplicationShutdown(): Promise<void> {
    const entries = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(entries.map(({ client, timeoutMs }) => closeRedisClient(client, timeoutMs)));
  }
}
