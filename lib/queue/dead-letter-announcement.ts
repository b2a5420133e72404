import type { LoggerService } from '@nestjs/common';
import type { EventEmitter2 } from '@nestjs/event-emitter';
import { DEFAULT_PAYMENT_ACCOUNT, PAYMENT_DEAD_LETTER_EVENT } from '../payment.constants.js';
import type { PaymentDeadLetter } from './payment-dead-letter.interface.js';

/**
 * Tells the operator (one `error` line with the call that replays it) and the app (the
 * `payment-gateway.dead-letter` event, when it has an EventEmitter2) that an event is now a
 * dead letter. A failing listener is logged; it never fails the job's bookkeeping.
 */
export function announceDeadLetter(
  deadLetter: PaymentDeadLetter,
  logger: LoggerService,
  eventEmitter: EventEmitter2 | undefined,
  describe: (error: unknown) => string,
): void {
  const { eventId, eventType, account } = deadLetter;
  logger.error(
    `${eventType} event ${eventId} (account ${account}) failed ${deadLetter.attempts} attempt(s) and is now a dead letter, ` +
      `kept until ${deadLetter.expiresAt.toISOString()}: ${deadLetter.lastError}. ` +
      `Replay it with PaymentDeadLetterService.replay(${JSON.stringify(eventId)}${account === DEFAULT_PAYMENT_ACCOUNT ? '' : `, ${JSON.stringify(account)}`}).`,
  );
  if (eventEmitter === undefined) return;
  const listenerFailed = (error: unknown) => logger.error(`A ${PAYMENT_DEAD_LETTER_EVENT} listener failed: ${describe(error)}`);
  try {
    eventEmitter.emitAsync(PAYMENT_DEAD_LETTER_EVENT, deadLetter).catch(listenerFailed);
  } catch (error) {
    listenerFailed(error);
  }
}
