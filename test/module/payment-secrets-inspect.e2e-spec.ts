// What a host can reach from the module's public services must never print a secret, at any
// depth: a debugger, `console.dir(service, { depth: null })` or an error reporter walking
// objects would otherwise show the Redis password, the client secret or a webhook secret.
import 'reflect-metadata';
import { inspect } from 'node:util';
import { PaymentGatewayService } from '../../lib/client/payment-gateway.service.js';
import { PaymentHealthIndicator } from '../../lib/health/payment-health.indicator.js';
import { PaymentDeadLetterService } from '../../lib/queue/payment-dead-letter.service.js';
import { PaymentWebhookReceiver } from '../../lib/webhooks/payment-webhook.receiver.js';
import { FAST_QUEUE_OPTIONS } from '../support/queue-app.js';
import { startRedisServer, type TestRedisServer } from '../support/redis-server.js';
import { envelope, postWebhook, startWebhookApp, WEBHOOK_SECRET } from '../support/webhooks-app.js';

const REDIS_PASSWORD = 'Redis_pw_4f9a';
const CLIENT_SECRET = 'client_secret_8c1e';

describe('public services print no secret at any depth', () => {
  let redis: TestRedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => redis?.stop());

  it.each(['inline', 'queue'] as const)('%s mode, with a Redis password, a client secret and a webhook secret', async (processing) => {
    // the test server has no password: Redis accepts the AUTH-less default user's password with a warning
    const redisUrl = redis.url.replace('redis://', `redis://:${REDIS_PASSWORD}@`);
    const w = await startWebhookApp({
      adapter: 'express',
      payment: { redisUrl, clientId: 'client-id', clientSecret: CLIENT_SECRET, processing, ...(processing === 'queue' ? FAST_QUEUE_OPTIONS : {}) },
    });
    try {
      await postWebhook(w.url, envelope()); // every lazy part built
      const services: object[] = [w.app.get(PaymentGatewayService), w.app.get(PaymentHealthIndicator), w.app.get(PaymentWebhookReceiver)];
      if (processing === 'queue') services.push(w.app.get(PaymentDeadLetterService));
      for (const service of services) {
        const text = inspect(service, { depth: Infinity, showHidden: false });
        for (const secret of [REDIS_PASSWORD, CLIENT_SECRET, WEBHOOK_SECRET]) {
          expect({ service: service.constructor.name, secret, leaks: text.includes(secret) }).toEqual({ service: service.constructor.name, secret, leaks: false });
        }
        const leak = findShownSecret(service, [REDIS_PASSWORD, CLIENT_SECRET, WEBHOOK_SECRET]);
        expect({ service: service.constructor.name, leak }).toEqual({ service: service.constructor.name, leak: undefined });
      }
    } finally {
      await w.close();
    }
  });
});

/**
 * The path to the first string holding one of `secrets` that `inspect` would show, walking
 * what it walks (own enumerable properties, Map and Set entries; an object with its own
 * `[inspect.custom]` by what that prints) without its depth or length limits: a plain
 * `inspect` under jest stops at some depths, which once hid the Nest container (and the raw
 * `forRoot()` options in it) reachable through a dispatcher's `ModuleRef`.
 */
function findShownSecret(root: object, secrets: string[]): string | undefined {
  const seen = new Set<unknown>();
  const queue: Array<[unknown, string]> = [[root, root.constructor.name]];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const [value, path] = next;
    if (typeof value === 'string') {
      if (secrets.some((secret) => value.includes(secret))) return path;
      continue;
    }
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value)) continue;
    seen.add(value);
    if (value !== root && typeof (value as Record<symbol, unknown>)[inspect.custom] === 'function') {
      queue.push([inspect(value, { depth: Infinity }), `${path} (custom inspect)`]);
      continue;
    }
    if (value instanceof Map) for (const [k, v] of value) queue.push([k, `${path}.<key>`], [v, `${path}.get(${String(k)})`]);
    if (value instanceof Set) for (const v of value) queue.push([v, `${path}.<entry>`]);
    for (const key of Reflect.ownKeys(value)) {
      if (!Object.prototype.propertyIsEnumerable.call(value, key)) continue;
      queue.push([(value as Record<PropertyKey, unknown>)[key], `${path}.${String(key)}`]);
    }
  }
  return undefined;
}
