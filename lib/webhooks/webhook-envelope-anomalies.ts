import type { LoggerService } from '@nestjs/common';
import type { WebhookEnvelopeAnomaly } from './payment-webhook-envelope.js';

/**
 * Reports envelope fields delivered as received although they depart from the documented
 * format: one warning per field and kind (per receiver), so a sender's habit is noticed
 * without a line per delivery.
 */
export function anomalyReporter(logger: LoggerService, account: string): (anomaly: WebhookEnvelopeAnomaly) => void {
  const reported = new Set<string>();
  return ({ field, kind }) => {
    const key = `${field}:${kind}`;
    if (reported.has(key)) return;
    reported.add(key);
    const what = kind === 'missing' ? 'without' : kind === 'not-a-string' ? 'with a non-string' : 'with an unexpected format of';
    const delivered = kind === 'not-a-string' ? `it is delivered without ${field}` : 'it is delivered as received';
    logger.warn(`A signed webhook of account ${account} arrived ${what} ${field}; ${delivered} (logged once per field and kind)`);
  };
}
