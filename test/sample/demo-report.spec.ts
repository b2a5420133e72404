import type { SimulatorDeliveryRecord } from '../../lib/testing/index.js';
import { reviewDemoRun } from '../../sample/src/demo-report.js';

// `npm start`'s verdict, on delivery logs shaped like a run's: it must not say "handled once each"
// for an event the module acknowledged but no shop handler took.
function delivery(eventType: string, eventId: string, duplicate: boolean): SimulatorDeliveryRecord {
  const responseBody = duplicate ? '{"received":true,"duplicate":true}' : '{"received":true}';
  return { eventId, eventType, merchantId: 1, attempt: 1, url: 'http://127.0.0.1:1/payments/webhook', status: 200, responseBody, duplicate } as SimulatorDeliveryRecord;
}

describe('the demo report', () => {
  const deliveries = [
    delivery('payment.succeeded', 'evt_s', false),
    delivery('payment.succeeded', 'evt_s', true),
    delivery('payment.created', 'evt_c', false),
    delivery('payment.created', 'evt_c', true),
    delivery('payment.pending', 'evt_p', false),
    delivery('payment.pending', 'evt_p', true),
  ];
  const paid = { status: 'PAID', fulfilments: 1 };

  it('accepts a run where every acknowledged event is in the shop audit', () => {
    const audit = ['evt_s', 'evt_c', 'evt_p'].map((eventId) => ({ eventId, outcome: 'recorded' }));
    const report = reviewDemoRun(deliveries, audit, paid);
    expect(report.problems).toEqual([]);
    expect(report.summary).toEqual({ handled: 3, duplicatesIgnored: 3, lateIgnored: 2, failed: 0 });
  });

  it('refuses a run where an event was acknowledged 2xx but reached no shop handler (a handler subscribed to the wrong type)', () => {
    // before, it printed "3 events handled once each" and exited 0
    const report = reviewDemoRun(deliveries, [{ eventId: 'evt_s', outcome: 'status SUCCESS: order PAID and fulfilled' }], paid);
    expect(report.summary.handled).toBe(1);
    expect(report.problems).toEqual([
      'event evt_c (payment.created) was acknowledged but no shop handler recorded it',
      'event evt_p (payment.pending) was acknowledged but no shop handler recorded it',
    ]);
  });
});
