import type { Logger } from '@nestjs/common';
import type { ResolvedPaymentOptions } from '../config/payment-module-options.interface.js';
import { type RedisClientLike, untilFirstConnected } from '../stores/redis-client.js';
import { outsideTraceContext } from '../telemetry/outside-trace-context.js';
import { DEAD_LETTER_TRIM_BATCH, DEAD_LETTER_TRIM_MAX_BATCHES, type DeadLetterKeys, trimExpiredDeadLetters } from './dead-letter-trim.js';
import { PAYMENT_EVENT_JOB_ID_PREFIX } from './payment-event-job.js';

/** How often dead letters past their retention are removed (at most every retention). */
const DEAD_LETTER_TRIM_INTERVAL_MS = 3_600_000;

/**
 * Removes one account's dead letters past their own retention (see `dead-letter-trim.ts`) when
 * started, then every hour (or `queueDeadLetterRetentionMs`); one trim at a time.
 */
export class DeadLetterTrimmer {
  private timer: NodeJS.Timeout | undefined;
  private trimming = false;
  private stopped = false;

  constructor(
    private readonly connection: RedisClientLike,
    private readonly options: ResolvedPaymentOptions,
    private readonly keys: DeadLetterKeys,
    private readonly logger: Logger,
    /** An error's message without the queue URL's secrets. */
    private readonly describe: (error: unknown) => string,
  ) {}

  start(): void {
    if (this.stopped || this.timer !== undefined) return;
    const retentionMs = this.options.queueDeadLetterRetentionMs;
    // outside the bootstrap's trace context: the trim belongs to no request
    this.timer = outsideTraceContext(() => {
      void this.trim();
      return setInterval(() => void this.trim(), Math.max(1000, Math.min(retentionMs, DEAD_LETTER_TRIM_INTERVAL_MS)));
    });
    this.timer.unref();
  }

  /** No trim from now on; one running stops before its next Redis call. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  private async trim(): Promise<void> {
    if (this.trimming) return; // a slow one still runs: the next round is enough
    this.trimming = true;
    const { account, redisTimeoutMs, queueDeadLetterRetentionMs } = this.options;
    try {
      // the fail-fast connection refuses commands while it makes its first connection (at bootstrap)
      await untilFirstConnected(this.connection, redisTimeoutMs);
      const removed = await trimExpiredDeadLetters(this.connection, {
        ...this.keys,
        fallbackRetentionMs: queueDeadLetterRetentionMs,
        jobIdPrefix: PAYMENT_EVENT_JOB_ID_PREFIX,
        batch: DEAD_LETTER_TRIM_BATCH,
        maxBatches: DEAD_LETTER_TRIM_MAX_BATCHES,
        timeoutMs: redisTimeoutMs,
        stopped: () => this.stopped,
      });
      if (removed > 0) this.logger.log(`Removed ${removed} dead letter(s) of account ${account} past their retention`);
    } catch (error) {
      // an outage is reported by the route and the health check; the next round tries again
      this.logger.debug?.(`Trimming the dead letters of account ${account} failed: ${this.describe(error)}`);
    } finally {
      this.trimming = false;
    }
  }
}
