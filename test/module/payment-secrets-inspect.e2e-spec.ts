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
      }
    } finally {
      await w.close();
    }
  });
});
