import {
  parseWebhookEnvelope,
  parseWebhookJson,
  validateWebhookEnvelope,
  type WebhookEnvelopeAnomaly,
} from '../../lib/webhooks/payment-webhook-envelope.js';
import { WebhookInvalidEnvelopeError, WebhookInvalidJsonError } from '../../lib/webhooks/payment-webhook.errors.js';

const valid = {
  eventId: 'evt_1',
  eventType: 'payment.succeeded',
  apiVersion: '2024-02-29',
  createdAt: '2024-03-01T10:00:00Z',
  environment: 'production',
  data: { trxId: 'trx_1', amount: '1.00000000' },
};

function errorsOf(body: unknown): Record<string, string[]> {
  try {
    validateWebhookEnvelope(body);
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookInvalidEnvelopeError);
    expect((error as WebhookInvalidEnvelopeError).code).toBe('WEBHOOK_INVALID_ENVELOPE');
    expect((error as WebhookInvalidEnvelopeError).httpStatus).toBe(400);
    return (error as WebhookInvalidEnvelopeError).errors;
  }
  throw new Error('expected the envelope to be rejected');
}

describe('webhook envelope', () => {
  it('accepts a valid envelope and keeps unknown fields and unknown event types', () => {
    expect(validateWebhookEnvelope({ ...valid, extra: 1 })).toEqual({ ...valid, extra: 1 });
    expect(validateWebhookEnvelope({ ...valid, eventType: 'loyalty.points_added' }).eventType).toBe('loyalty.points_added');
  });

  it.each(['2024-03-01T10:00:00Z', '2024-03-01T10:00:00.123456Z', '2024-03-01T10:00:00+00:00', '2024-03-01T10:00Z', '2024-03-01T10:00:00.5+0530'])(
    'accepts createdAt %s without reporting it',
    (createdAt) => {
      const anomalies: WebhookEnvelopeAnomaly[] = [];
      expect(validateWebhookEnvelope({ ...valid, createdAt }, (a) => anomalies.push(a)).createdAt).toBe(createdAt);
      expect(anomalies).toEqual([]);
    },
  );

  it('requires only what dispatch needs, listing every bad field', () => {
    const errors = errorsOf({ eventId: '', eventType: 5, apiVersion: '2024-13-01', createdAt: 'yesterday', data: [] });
    expect(Object.keys(errors).sort()).toEqual(['data', 'eventId', 'eventType']);
  });

  it.each([
    ['data', null],
    ['data', 'x'],
    ['data', [1]],
    ['eventId', 'x'.repeat(513)],
    ['eventId', '   '],
    ['eventId', 42],
    ['eventType', 'payment.*'],
    ['eventType', '*.succeeded'],
    ['eventType', '**'],
    ['eventType', 'payment..succeeded'],
    ['eventType', 'Payment.Succeeded'],
    ['eventType', ''],
  ])('rejects %s = %j', (field, value) => {
    expect(Object.keys(errorsOf({ ...valid, [field]: value }))).toEqual([field]);
  });

  it('refuses an eventId that is not well-formed Unicode, so two ids never share one store key', () => {
    // both lone surrogates become the same replacement bytes once encoded
    expect(Buffer.from('evt\ud800')).toEqual(Buffer.from('evt\udbff'));
    for (const raw of ['{"eventId":"evt\\ud800"', '{"eventId":"evt\\udbff"']) {
      const body = JSON.parse(`${raw},"eventType":"payment.succeeded","data":{}}`) as unknown;
      expect(errorsOf(body)).toEqual({ eventId: ['must be well-formed Unicode (no lone surrogates)'] });
    }
    expect(validateWebhookEnvelope({ ...valid, eventId: 'evt_🙂_é' }).eventId).toBe('evt_🙂_é');
  });

  it.each([
    ['createdAt', '2024-03-01', 'malformed'],
    ['createdAt', '2024-03-01T10:00:00', 'malformed'],
    ['createdAt', 1709287200, 'not-a-string'],
    ['createdAt', undefined, 'missing'],
    ['apiVersion', '2024-02-30', 'malformed'],
    ['apiVersion', '24-01-01', 'malformed'],
    ['apiVersion', '2024-01-01T00:00:00Z', 'malformed'],
    ['apiVersion', undefined, 'missing'],
    ['environment', '   ', 'malformed'],
    ['environment', undefined, 'missing'],
    ['environment', 1, 'not-a-string'],
    ['apiVersion', { v: 1 }, 'not-a-string'],
  ])('delivers %s = %j as received (a string, or absent) and reports it (%s)', (field, value, kind) => {
    const anomalies: WebhookEnvelopeAnomaly[] = [];
    const body: Record<string, unknown> = { ...valid, [field]: value };
    if (value === undefined) delete body[field];
    const event = validateWebhookEnvelope(body, (a) => anomalies.push(a));
    // the event's type says "a string, or absent": a value of another kind is left out, never handed on
    if (kind === 'not-a-string') expect(Object.hasOwn(event, field)).toBe(false);
    else expect((event as unknown as Record<string, unknown>)[field]).toBe(value);
    expect(anomalies).toEqual([{ field, kind }]);
    // the same without a listener
    const unheard = validateWebhookEnvelope({ ...valid, [field]: value }) as unknown as Record<string, unknown>;
    expect(unheard[field]).toBe(kind === 'not-a-string' ? undefined : value);
  });

  it.each([[null], [[]], ['text'], [42]])('rejects a body that is not an object (%j)', (body) => {
    expect(errorsOf(body)).toEqual({ body: ['must be a JSON object'] });
  });

  it('parses raw bytes, tolerating a BOM, and reports broken JSON and invalid UTF-8 as 400', () => {
    expect(parseWebhookEnvelope(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(valid))]))).toEqual(valid);
    expect(() => parseWebhookJson(Buffer.from('{"a":'))).toThrow(WebhookInvalidJsonError);
    expect(() => parseWebhookJson(Buffer.from([0xff, 0xfe, 0x00, 0x7b]))).toThrow(WebhookInvalidJsonError);
  });

  it.each([[[0xff]], [[0xc3, 0x28]], [[0xed, 0xa0, 0x80]], [[0xc0, 0xaf]], [[0xf8, 0x88, 0x80, 0x80, 0x80]]])(
    'refuses invalid UTF-8 (%j) inside an otherwise valid envelope instead of decoding it lossily',
    (bytes) => {
      const text = JSON.stringify({ ...valid, data: { ...valid.data, custom: 'order-@' } });
      const at = text.indexOf('@');
      const raw = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bytes), Buffer.from(text.slice(at + 1))]);
      expect(() => parseWebhookEnvelope(raw)).toThrow('The webhook body is not valid UTF-8');
      expect(() => parseWebhookEnvelope(raw)).toThrow(WebhookInvalidJsonError);
    },
  );

  it('accepts valid multi-byte UTF-8', () => {
    const raw = Buffer.from(JSON.stringify({ ...valid, data: { custom: 'commande-é-注文-🙂' } }));
    expect((parseWebhookEnvelope(raw).data as { custom: string }).custom).toBe('commande-é-注文-🙂');
  });
});
