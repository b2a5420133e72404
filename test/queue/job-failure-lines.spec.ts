import { EventEmitter2 } from '@nestjs/event-emitter';
import { JobFailureLines } from '../../lib/queue/job-failure-lines.js';
import type { PaymentDeadLetter } from '../../lib/queue/payment-dead-letter.interface.js';
import { PAYMENT_DEAD_LETTER_EVENT } from '../../lib/payment.constants.js';
import { CollectingLogger } from '../support/collecting-logger.js';

function deadLetter(eventId: string): PaymentDeadLetter {
  const now = new Date();
  return {
    account: 'default',
    eventId,
    eventType: 'payment.succeeded',
    event: { eventId, eventType: 'payment.succeeded', data: {} },
    attempts: 3,
    lastError: 'downstream always failing',
    receivedAt: now,
    failedAt: now,
    expiresAt: new Date(now.getTime() + 86_400_000),
  } as unknown as PaymentDeadLetter;
}

describe('JobFailureLines', () => {
  // A signed capture of an event that keeps failing, sent again and again within its replay window,
  // replays its dead letter each time (as the service's re-trigger would): its attempt and dead-letter
  // lines were said at warn and error every time, without limit.
  it('says the attempts and the dead letter of one event at warn / error at most 10 times a minute, the rest at debug; other events stay loud', () => {
    const logger = new CollectingLogger();
    const emitter = new EventEmitter2();
    const announced: string[] = [];
    emitter.on(PAYMENT_DEAD_LETTER_EVENT, (letter: PaymentDeadLetter) => void announced.push(letter.eventId));
    const lines = new JobFailureLines(logger, 'default');
    for (let replay = 0; replay < 15; replay++) {
      lines.attemptFailed(1, 3, 'payment.succeeded', 'evt_replayed', 'downstream always failing');
      lines.attemptFailed(2, 3, 'payment.succeeded', 'evt_replayed', 'downstream always failing');
      lines.deadLettered(deadLetter('evt_replayed'), emitter, String);
    }
    const at = (level: string) => logger.lines.filter((l) => l.level === level);
    expect(at('warn')).toHaveLength(10);
    expect(at('error')).toHaveLength(10);
    expect(at('debug')).toHaveLength(20 + 5);
    expect(at('error')[0]!.message).toMatch(/payment.succeeded event evt_replayed \(account default\) failed 3 attempt\(s\) and is now a dead letter/);
    expect(at('warn')[0]!.message).toMatch(/Attempt 1 of 3 of payment.succeeded event evt_replayed \(account default\) failed; it will be retried/);
    // the app still hears of each one (its listener decides what to page)
    expect(announced).toHaveLength(15);
    lines.deadLettered(deadLetter('evt_other'), emitter, String);
    expect(at('error')).toHaveLength(11);
  });
});
