import 'reflect-metadata';
import http from 'node:http';
import { computeWebhookSignature, createWebhookSignatureHeader } from '../../lib/webhooks/webhook-signature.js';
import {
  paymentSucceeded,
  postSigned,
  RELIABILITY_WEBHOOK_SECRET as SECRET,
  type ReliabilityAdapter,
  type ReliabilityApp,
  runPool,
  seededRandom,
  startReliabilityApp,
} from '../support/reliability-app.js';

const REQUESTS_PER_ADAPTER = 5_000;
const OVERSIZED = 8; // 1 MiB+ bodies are costly; a few per adapter prove the point
const MIB = 1024 * 1024;

interface BadRequest {
  kind: string;
  body: Buffer;
  headers: Record<string, string | string[]>;
}

interface Outcome {
  kind: string;
  status: number | 'error';
  error?: string;
}

const now = () => Math.floor(Date.now() / 1000);
const sign = (body: Buffer | string, t = now(), secret = SECRET) => createWebhookSignatureHeader(body, secret, t);
const json = (body: Buffer, signature: string | string[] | undefined, contentType = 'application/json'): Record<string, string | string[]> => {
  const headers: Record<string, string | string[]> = { 'content-type': contentType };
  if (signature !== undefined) headers['x-service-signature'] = signature;
  return headers;
};

const INVALID_UTF8 = 'invalid UTF-8 in a field, signed';

/** One malformed request, chosen by `random` from every family the issue lists (or only `onlyKind`). */
function badRequest(random: () => number, index: number, onlyKind?: string): BadRequest {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const randomBytes = (max: number) => Buffer.from(Array.from({ length: Math.floor(random() * max) }, () => Math.floor(random() * 256)));
  const valid = Buffer.from(JSON.stringify(paymentSucceeded('bad')));
  const families: Array<() => BadRequest> = [
    () => {
      const body = randomBytes(4096);
      return { kind: 'random bytes, signed', body, headers: json(body, sign(body)) };
    },
    () => {
      const body = valid.subarray(0, Math.floor(random() * (valid.length - 1)));
      return { kind: 'truncated JSON, signed', body, headers: json(body, sign(body)) };
    },
    () => {
      const body = Buffer.from(pick(['hello', '<event id="1"/>', 'eventId=evt_1&eventType=payment.succeeded', 'undefined', "{'a':1}", '{"eventId":']));
      return { kind: 'non-JSON, signed', body, headers: json(body, sign(body)) };
    },
    () => {
      const body = Buffer.from(
        JSON.stringify(
          pick<unknown>([
            null,
            42,
            'evt',
            [],
            [JSON.parse(valid.toString())],
            {},
            { ...JSON.parse(valid.toString()), eventId: undefined },
            { ...JSON.parse(valid.toString()), eventId: 123 },
            { ...JSON.parse(valid.toString()), eventId: '' },
            { ...JSON.parse(valid.toString()), eventType: undefined },
            { ...JSON.parse(valid.toString()), data: [] },
            { ...JSON.parse(valid.toString()), data: 'x' },
            // a signed body with createdAt: 'yesterday' is delivered as received; these are not
            { ...JSON.parse(valid.toString()), eventType: 'payment.*' },
            { ...JSON.parse(valid.toString()), eventType: '**' },
            { ...JSON.parse(valid.toString()), eventId: 'evt_\ud800' },
          ]),
        ) ?? 'null',
      );
      return { kind: 'JSON but not an envelope, signed', body, headers: json(body, sign(body)) };
    },
    () => {
      const body = Buffer.from('['.repeat(5000) + ']'.repeat(5000));
      return { kind: 'deeply nested JSON, signed', body, headers: json(body, sign(body)) };
    },
    () => {
      const body = randomBytes(512);
      const type = pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=xyz', 'application/xml', 'application/json; charset=latin-9', 'image/png', '']);
      return { kind: `content-type "${type}"`, body, headers: json(body, sign(body), type) };
    },
    () => ({ kind: 'valid envelope, no content-type, wrong signature', body: valid, headers: { 'x-service-signature': sign(valid, now(), 'whsec_wrong') } }),
    () => {
      const header = pick([
        '',
        'garbage',
        't=',
        'v1=',
        ',,,',
        't=abc,v1=' + 'a'.repeat(64),
        `t=${now()}`,
        `v1=${'a'.repeat(64)}`,
        `t=${now()},v1=${'a'.repeat(63)}`,
        `t=${now()},v1=${'a'.repeat(65)}`,
        `t=${now()},v1=${'a'.repeat(64)}`,
        `t=${now()},t=${now()},v1=${'a'.repeat(64)}`,
        `t=${now()},${Array.from({ length: 20 }, () => `v1=${'b'.repeat(64)}`).join(',')}`,
        `t=${now()},v1=${'c'.repeat(4100)}`,
        `T=${now()},V1=${computeWebhookSignature(valid, SECRET, now())}`,
        `t=-${now()},v1=${computeWebhookSignature(valid, SECRET, now())}`,
        `t=${now()}.5,v1=${computeWebhookSignature(valid, SECRET, now())}`,
      ]);
      return { kind: 'broken signature header', body: valid, headers: json(valid, header) };
    },
    () => ({ kind: 'missing signature header', body: valid, headers: json(valid, undefined) }),
    () => ({
      kind: 'repeated signature headers',
      body: valid,
      headers: json(valid, random() < 0.5 ? [sign(valid), sign(valid)] : [sign(valid), 'garbage']),
    }),
    () => {
      const t = pick(['99999999999', '999999999999', '9'.repeat(13), '9'.repeat(40), '0', '1']);
      return { kind: 'huge or ancient t', body: valid, headers: json(valid, `t=${t},v1=${computeWebhookSignature(valid, SECRET, t)}`) };
    },
    () => {
      const hex = Array.from({ length: 64 }, () => pick([...'0123456789abcdefghijklmnopqrstuvwxyz-+ ZG'])).join('');
      return { kind: 'non-hex v1', body: valid, headers: json(valid, `t=${now()},v1=${hex.replace(/^[0-9a-f]/, 'z')}`) };
    },
    () => {
      // one byte of the body changed after signing
      const body = Buffer.from(valid);
      const at = Math.floor(random() * body.length);
      const signature = sign(body);
      body[at] = (body[at]! + 1 + Math.floor(random() * 254)) % 256;
      return { kind: 'body changed after signing', body, headers: json(body, signature) };
    },
    () => {
      // invalid UTF-8 inside a string field of an otherwise valid envelope, correctly signed
      const text = valid.toString();
      const at = text.indexOf('order-') + 2;
      const bad = pick([[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc0, 0xaf]]);
      const body = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bad), Buffer.from(text.slice(at))]);
      return { kind: INVALID_UTF8, body, headers: json(body, sign(body)) };
    },
  ];
  if (onlyKind === INVALID_UTF8) return families.at(-1)!();
  if (index < OVERSIZED) {
    const body = Buffer.concat([Buffer.from('{"eventId":"evt_big","pad":"'), Buffer.alloc(MIB + 10, 'x'), Buffer.from('"}')]);
    return { kind: '1 MiB+ body, signed', body, headers: json(body, sign(body)) };
  }
  return pick(families.slice(0, -1))();
}

function send(url: URL, agent: http.Agent, request: BadRequest): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { ...request.headers, 'content-length': String(request.body.length) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ kind: request.kind, status: res.statusCode ?? 0 }));
        res.on('error', (e) => resolve({ kind: request.kind, status: 'error', error: e.message }));
      },
    );
    req.on('error', (e) => resolve({ kind: request.kind, status: 'error', error: e.message }));
    req.end(request.body);
  });
}

describe.each(['express', 'fastify'] as ReliabilityAdapter[])('reliability: malformed webhook requests on %s', (adapter) => {
  let app: ReliabilityApp;
  beforeAll(async () => {
    app = await startReliabilityApp(adapter);
  });
  afterAll(async () => {
    await app?.close();
  });

  it(`answers ${REQUESTS_PER_ADAPTER} malformed requests with 4xx only, runs no handler, then still handles valid events`, async () => {
    const random = seededRandom(adapter === 'express' ? 11 : 12);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const url = new URL(app.webhookUrl);
    try {
      const outcomes = await runPool([...Array(REQUESTS_PER_ADAPTER).keys()], 16, (i) => send(url, agent, badRequest(random, i)));

      const byKind = new Map<string, Set<number | string>>();
      for (const o of outcomes) byKind.set(o.kind, (byKind.get(o.kind) ?? new Set()).add(o.status));
      const serverErrors = outcomes.filter((o) => typeof o.status === 'number' && o.status >= 500);
      const accepted = outcomes.filter((o) => typeof o.status === 'number' && o.status < 400);
      // a connection may be cut only on an oversized body (the server answers 413 before reading it all)
      const transportErrors = outcomes.filter((o) => o.status === 'error' && o.kind !== '1 MiB+ body, signed');
      expect({ serverErrors, accepted, transportErrors }).toEqual({ serverErrors: [], accepted: [], transportErrors: [] });
      expect(outcomes.filter((o) => typeof o.status === 'number' && o.status >= 400 && o.status < 500).length).toBeGreaterThanOrEqual(
        REQUESTS_PER_ADAPTER - OVERSIZED,
      );
      expect(byKind.size).toBeGreaterThanOrEqual(14);
      expect(app.effects.attempts.size).toBe(0);
    } finally {
      agent.destroy();
    }

    const valid = Array.from({ length: 10 }, () => paymentSucceeded('after-bad'));
    for (const e of valid) expect(await postSigned(app.webhookUrl, e)).toMatchObject({ status: 200 });
    expect(valid.map((e) => app.effects.done.get(e.eventId))).toEqual(valid.map(() => 1));
    expect(app.effects.totalRuns).toBe(10);
  }, 120_000);

  // Correctly signed, but the bytes are not UTF-8: decoding replaces them with U+FFFD, so the
  // handler would see a different `custom`/`eventId` than the sender meant (two distinct
  // byte sequences can even decode to the same eventId and be deduplicated as one).
  it('refuses correctly signed bodies that are not valid UTF-8 (400, no handler call)', async () => {
    const random = seededRandom(adapter === 'express' ? 21 : 22);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const url = new URL(app.webhookUrl);
    const runsBefore = app.effects.attempts.size;
    try {
      const outcomes = await runPool([...Array(100).keys()], 8, (i) => send(url, agent, badRequest(random, i, INVALID_UTF8)));
      expect(outcomes.filter((o) => o.status !== 400)).toEqual([]);
      expect(app.effects.attempts.size).toBe(runsBefore);
    } finally {
      agent.destroy();
    }
  });
});
