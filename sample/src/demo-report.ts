import type { SimulatorDeliveryRecord } from 'nestjs-payment-gateway/testing';
import type { ProcessedEvent } from './orders/order.types.js';

/**
 * What `npm start` checks, apart from the demo's I/O: given the simulator's webhook
 * deliveries for the order, the shop's audit of them and the order at the end, the
 * transcript lines and the list of problems (empty when the run went as it should).
 */

export interface DemoSummary {
  /** Distinct events a shop handler ran for (acknowledged 2xx, and in the shop's audit). */
  handled: number;
  /** Deliveries the module answered `duplicate: true`. */
  duplicatesIgnored: number;
  /** Distinct `*.created` / `*.pending` events handled after `payment.succeeded`. */
  lateIgnored: number;
  /** Deliveries not answered 2xx. */
  failed: number;
}

export interface DemoReport {
  lines: string[];
  summary: DemoSummary;
  problems: string[];
}

export function reviewDemoRun(
  deliveries: readonly SimulatorDeliveryRecord[],
  audit: readonly Pick<ProcessedEvent, 'eventId' | 'outcome'>[],
  order: { status: string; fulfilments: number },
): DemoReport {
  const summary: DemoSummary = { handled: 0, duplicatesIgnored: 0, lateIgnored: 0, failed: 0 };
  const lines: string[] = [];
  const problems: string[] = [];
  const outcomeOf = new Map(audit.map((e) => [e.eventId, e.outcome]));
  // Per event: its type and how many deliveries reached a handler (0 until one does).
  const events = new Map<string, { type: string; handled: number }>();
  const lateEvents = new Set<string>();
  let succeededSeen = false;
  let duplicatesSeen = 0;

  deliveries.forEach((d, i) => {
    // The simulator's delivery log keeps what the module answered to each attempt.
    const status = d.status;
    const ok = status !== undefined && status >= 200 && status < 300;
    const duplicateAnswer = /"duplicate"\s*:\s*true/.test(d.responseBody ?? '');
    const late = succeededSeen && /\.(created|pending)$/.test(d.eventType);
    const event = events.get(d.eventId) ?? { type: d.eventType, handled: 0 };
    events.set(d.eventId, event);
    // A copy, or any delivery of an event a handler already ran for (a re-send): the
    // module must answer it duplicate: true and run no handler.
    const isDuplicate = d.duplicate === true || event.handled > 0;
    if (isDuplicate) duplicatesSeen++;
    const head = `   ${String(i + 1).padStart(2)}. ${d.eventType.padEnd(17)} ${d.eventId}  attempt ${d.attempt}${d.duplicate ? ', duplicate copy' : ''}`;
    let text: string;
    if (!ok) {
      summary.failed++;
      text = `→ ${status ?? d.error ?? 'no answer'}: not handled, the service will retry`;
    } else if (duplicateAnswer) {
      summary.duplicatesIgnored++;
      text = `→ ${status} ${d.responseBody}: duplicate ignored by the module, no handler ran`;
    } else {
      event.handled++;
      if (late) lateEvents.add(d.eventId);
      const outcome = outcomeOf.get(d.eventId) ?? '(no audit row)';
      text =
        `→ ${status} handled${event.handled > 1 ? ' AGAIN' : ''}: ${outcome}` +
        (late ? ' (arrived out of order: ignored for the order state)' : '');
    }
    if (isDuplicate && !duplicateAnswer) {
      problems.push(`delivery ${i + 1} (${d.eventType} ${d.eventId}) repeats a handled event but was not answered duplicate: true`);
    }
    if (d.eventType === 'payment.succeeded' && ok) succeededSeen = true;
    lines.push(`${head}\n       ${text}`);
  });

  for (const [eventId, event] of events) {
    // the module's 2xx says it dispatched the event; the audit row, that a shop handler took it
    const audited = outcomeOf.has(eventId);
    if (event.handled > 0 && audited) summary.handled++;
    if (event.handled !== 1) problems.push(`event ${eventId} (${event.type}) was handled ${event.handled} times, expected exactly once`);
    else if (!audited) problems.push(`event ${eventId} (${event.type}) was acknowledged but no shop handler recorded it`);
  }
  summary.lateIgnored = lateEvents.size;

  if (order.status !== 'PAID') problems.push(`order is ${order.status}, expected PAID`);
  if (order.fulfilments !== 1) problems.push(`order fulfilled ${order.fulfilments} times, expected exactly 1`);
  // The demo is there to show duplicates and late events being survived: both must occur.
  if (duplicatesSeen === 0) problems.push('no duplicate delivery was seen');
  if (summary.lateIgnored === 0) problems.push('no out-of-order event was seen');
  if (summary.failed > 0) problems.push(`${summary.failed} deliveries were not answered 2xx`);
  return { lines, summary, problems };
}
