import type { LoggerService } from '@nestjs/common';
import type { EventEmitter2 } from '@nestjs/event-emitter';
import { DEFAULT_PAYMENT_ACCOUNT, PAYMENT_DEAD_LETTER_EVENT } from '../payment.constants.js';
import { RepeatableLogLines } from '../telemetry/repeatable-log-lines.js';
import type { PaymentDeadLetter } from './payment-dead-letter.interface.js';

/**
 * The worker's lines about an event's failed attempts and its dead letter. A signed capture of an
 * event that keeps failing, sent again within its replay window, replays its dead letter each time
 * (as the service's re-trigger does): per event, at most ten lines a minute each at `warn` (an
 * attempt) and `error` (a dead letter), the rest at `debug` (see `RepeatableLogLines`).
 */
export class JobFailureLines {
  private readonly attempts = new RepeatableLogLines('warn', 1000);
  private readonly deadLetters = new RepeatableLogLines('error', 1000);

  constructor(
    private readonly logger: LoggerService,
    private readonly account: string,
  ) {}

  attemptFailed(attempt: number, attempts: number, eventType: string, eventId: string, reason: string): void {
    const line = `Attempt ${attempt} of ${attempts} of ${eventType} event ${eventId} (account ${this.account}) failed; it will be retried: ${reason}`;
    this.attempts.say(this.logger, eventId, line);
  }

  /**
   * Tells the operator (one `error` line with the call that replays it) and the app (the
   * `payment-gateway.dead-letter` event, when it has an EventEmitter2, each time) that an event is
   * now a dead letter. A failing listener is logged; it never fails the job's bookkeeping.
   */
  deadLettered(deadLetter: PaymentDeadLetter, eventEmitter: EventEmitter2 | undefined, describe: (error: unknown) => string): void {
    const { eventId, eventType, account } = deadLetter;
    const line =
      `${eventType} event ${eventId} (account ${account}) failed ${deadLetter.attempts} attempt(s) and is now a dead letter, ` +
      `kept until ${deadLetter.expiresAt.toISOString()}: ${deadLetter.lastError}. ` +
      `Replay it with PaymentDeadLetterService.replay(${JSON.stringify(eventId)}${account === DEFAULT_PAYMENT_ACCOUNT ? '' : `, ${JSON.stringify(account)}`}).`;
    this.deadLetters.say(this.logger, eventId, line);
    if (eventEmitter === undefined) return;
    const listenerFailed = (error: unknown) => this.logger.error(`A ${PAYMENT_DEAD_LETTER_EVENT} listener failed: ${describe(error)}`);
    try {
      eventEmitter.emitAsync(PAYMENT_DEAD_LETTER_EVENT, deadLetter).catch(listenerFailed);
    } catch (error) {
      listenerFailed(error);
    }
  }
}
