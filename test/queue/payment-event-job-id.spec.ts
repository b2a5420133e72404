import { paymentEventJobId } from '../../lib/queue/payment-event-job.js';

// Job ids are how every copy of an event meets the same job, across instances and releases: an
// instance of a rolling upgrade must compute exactly the ids the previous release wrote.
describe('paymentEventJobId', () => {
  it.each([
    ['default', 'evt_1', 'evt-HgbPIONhv8jmC7MscNxh5kgrQycKtC7FDCPHwA7aT5E'],
    ['eu', 'évt\u{1F4B3}', 'evt-6ewgM95st-OcCWwhktzKQq9BeKUJz7ZnRRCisJCsdNk'],
  ])('account %j, eventId %j → the id earlier releases wrote (SHA-256 of account, NUL, eventId as UTF-8)', (account, eventId, id) => {
    expect(paymentEventJobId(account, eventId)).toBe(id);
  });

  it('tells accounts apart, also where account and eventId run into each other', () => {
    expect(paymentEventJobId('a', 'bc')).not.toBe(paymentEventJobId('ab', 'c'));
    expect(paymentEventJobId('eu', 'evt_1')).not.toBe(paymentEventJobId('default', 'evt_1'));
  });
});
