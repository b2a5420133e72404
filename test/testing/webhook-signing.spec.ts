import { createHmac } from 'node:crypto';
import {
  buildEvent,
  buildPaymentEvent,
  buildPayoutEvent,
  buildRefundEvent,
  signWebhookPayload,
} from '../../lib/testing/index.js';

describe('signWebhookPayload', () => {
  it('signs "<t>.<body>" with HMAC-SHA256 hex (spec 6.3)', () => {
    const body = '{"eventId":"evt_1"}';
    const expected = createHmac('sha256', 'whsec').update(`1700000000.${body}`).digest('hex');
    expect(signWebhookPayload(body, 'whsec', { timestamp: 1700000000 })).toBe(`t=1700000000,v1=${expected}`);
    expect(signWebhookPayload(Buffer.from(body), 'whsec', { timestamp: 1700000000 })).toBe(`t=1700000000,v1=${expected}`);
  });

  it('refuses a timestamp that is not whole Unix seconds (a fraction, milliseconds, negative)', () => {
    // a fraction for sure: Date.now() / 1000 is whole once in every 1,000 runs
    for (const bad of [Math.floor(Date.now() / 1000) + 0.5, Date.now(), -1, Number.NaN]) {
      expect(() => signWebhookPayload('{}', 'whsec_x', { timestamp: bad })).toThrow(/whole Unix seconds/);
    }
    expect(signWebhookPayload('{}', 'whsec_x', { timestamp: 1_700_000_000 })).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
  });

  it('uses the current time by default', () => {
    const t = Number(/^t=(\d+),v1=[0-9a-f]{64}$/.exec(signWebhookPayload('x', 's'))?.[1]);
    expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(5);
  });
});

describe('event builders', () => {
  it('build spec 2.1 envelopes with typed defaults and overrides', () => {
    const e = buildPaymentEvent('payment.succeeded', { trxId: 'trx_1', custom: 'order-7' }, { environment: 'production' });
    expect(e).toEqual({
      eventId: expect.stringMatching(/^evt_[0-9a-f]{24}$/),
      eventType: 'payment.succeeded',
      apiVersion: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      createdAt: expect.any(String),
      environment: 'production',
      data: {
        trxId: 'trx_1',
        token: expect.any(String),
        amount: '10.00000000',
        currency: 'USD',
        status: 'SUCCESS',
        custom: 'order-7',
        merchantId: 1,
      },
    });
    expect(new Date(e.createdAt).toISOString()).toBe(e.createdAt);
    expect(buildPaymentEvent('payment.failed').data.status).toBe('REJECTED');
    expect(buildRefundEvent('refund.failed').data).toMatchObject({ refundUid: expect.any(String), failureReason: expect.any(String) });
    expect(buildPayoutEvent('payout.succeeded').data).toMatchObject({ payoutUid: expect.any(String), status: 'SUCCESS' });
    const custom = buildEvent('dispute.created', { trxId: 'trx_9' });
    expect(custom.eventType).toBe('dispute.created');
    expect(buildEvent('x', {}).eventId).not.toBe(buildEvent('x', {}).eventId);
  });
});
