import 'reflect-metadata';
import { gzipSync } from 'node:zlib';
import compress from '@fastify/compress';
import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { buildEvent } from '../../lib/testing/event-builders.js';
import { createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import { type AdapterKind, postWebhook, startWebhookApp, type WebhookApp, WEBHOOK_SECRET } from '../support/webhooks-app.js';

// A delivery with a Content-Encoding: Express's JSON parser inflates it; on Fastify the host's
// @fastify/compress does (its request decompression), and its refusals carry the route's codes as Express's do.
const HOSTS: Array<[string, AdapterKind]> = [
  ['Express (its JSON parser inflates)', 'express'],
  ['Fastify with @fastify/compress', 'fastify'],
];

describe.each(HOSTS)('webhook bodies with a Content-Encoding, %s', (_label, adapter) => {
  let w: WebhookApp;
  beforeAll(async () => {
    w = await startWebhookApp({
      adapter,
      configure: async (app) => {
        if (adapter === 'fastify') await (app as NestFastifyApplication).register(compress);
      },
    });
  });
  afterAll(() => w.close());

  it('a gzip delivery signed over the inflated bytes is handled once', async () => {
    const event = buildEvent('payment.succeeded', { trxId: 'trx_gzip' });
    const plain = Buffer.from(JSON.stringify(event));
    const signature = createWebhookSignatureHeader(plain, WEBHOOK_SECRET, Math.floor(Date.now() / 1000));
    const answer = await postWebhook(w.url, gzipSync(plain), { signature, headers: { 'content-encoding': 'gzip' } });
    expect(answer).toMatchObject({ status: 200, json: { received: true } });
    expect(w.handlers.calls.filter((call) => call.handler === 'payment.*' && call.event.eventId === event.eventId)).toHaveLength(1);
  });

  it('a gzip-labelled body that does not inflate: 400 WEBHOOK_BAD_REQUEST', async () => {
    const answer = await postWebhook(w.url, buildEvent('payment.succeeded', { trxId: 'trx_refused' }), { headers: { 'content-encoding': 'gzip' } });
    expect([answer.status, answer.json]).toEqual([400, { statusCode: 400, code: 'WEBHOOK_BAD_REQUEST', message: 'The webhook request could not be read' }]);
  });

  it('an encoding nobody inflates: 415 WEBHOOK_UNSUPPORTED_MEDIA_TYPE, in the words of an encoding refusal', async () => {
    const answer = await postWebhook(w.url, buildEvent('payment.succeeded', { trxId: 'trx_refused' }), { headers: { 'content-encoding': 'x-unknown' } });
    expect([answer.status, answer.json]).toEqual([
      415,
      { statusCode: 415, code: 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE', message: 'The webhook body encoding or charset is not supported' },
    ]);
  });
});

/** A host filter that answers every error with the body of Nest's default 500. */
@Catch()
class EverythingIs500Filter implements ExceptionFilter {
  catch(_error: unknown, host: ArgumentsHost): void {
    void host.switchToHttp().getResponse<{ status(code: number): { send(body: unknown): void } }>().status(500).send({ statusCode: 500, message: 'Internal server error' });
  }
}

describe("Fastify: a host filter's own 500 for a parser refusal", () => {
  it("stays the host's answer for Fastify's own refusals (only @fastify/compress's, which Nest cannot map, get the route's)", async () => {
    const w = await startWebhookApp({ adapter: 'fastify', configure: (app) => app.useGlobalFilters(new EverythingIs500Filter()) });
    try {
      const tooLarge = await postWebhook(w.url, ' '.repeat(2 * 1024 * 1024));
      expect([tooLarge.status, tooLarge.json]).toEqual([500, { statusCode: 500, message: 'Internal server error' }]);
    } finally {
      await w.close();
    }
  });
});
