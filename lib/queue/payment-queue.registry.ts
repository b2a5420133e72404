import { Injectable } from '@nestjs/common';
import { PaymentConfigurationError } from '../config/payment-configuration.error.js';
import type { PaymentEventQueue } from './payment-event-queue.js';

/**
 * The event queue of every account that runs in queue mode, filled while the accounts'
 * providers are created; one per app, so `PaymentDeadLetterService` reaches every account.
 */
@Injectable()
export class PaymentQueueRegistry {
  private readonly queues = new Map<string, PaymentEventQueue>();

  register(queue: PaymentEventQueue): void {
    this.queues.set(queue.account, queue);
  }

  /** The account's queue, or a configuration error naming the accounts that have one. */
  require(account: string): PaymentEventQueue {
    const queue = this.queues.get(account);
    if (queue === undefined) {
      const names = [...this.queues.keys()];
      throw new PaymentConfigurationError(
        [
          `account '${account}' has no event queue: dead letters exist only for accounts with processing: 'queue' ` +
            `(queue-mode accounts: ${names.join(', ') || 'none'})`,
        ],
        account,
      );
    }
    return queue;
  }
}
