import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { closeRedisClient, createFailFastRedisClient, type RedisClientLike } from './redis-client.js';

/**
 * The app's Redis connections for the webhook event stores, one per URL: accounts on the
 * same Redis share a connection (their keys are namespaced by prefix and account). Closed
 * at application shutdown, after the stores stopped using them.
 */
@Injectable()
export class PaymentRedisConnections implements OnApplicationShutdown {
  private readonly clients = new Map<string, RedisClientLike>();

  /** Number of open connections (one per distinct URL). */
  get size(): number {
    return this.clients.size;
  }

  client(url: string): RedisClientLike {
    let client = this.clients.get(url);
    if (client === undefined) {
      client = createFailFastRedisClient(url);
      this.clients.set(url, client);
    }
    return client;
  }

  async onApplicationShutdown(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((client) => closeRedisClient(client)));
  }
}
