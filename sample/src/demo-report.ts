import type { SimulatorDeliveryRecord } from 'nestjs-payment-gateway/testing';
import type { Order, ProcessedEvent } from './orders/order.types.js';

/**
 * What `npm start` checks, apart from the demo's I/O: given the simulator's webhook
 * deliveries for the order, the shop's audit of them and the order at the end, the
 * transcript lines and the list of problems (empty when the run went as it should).
 */

export interface DemoSummary {
  handled: number;
  duplicatesIgnored: number;
  lateIgnored: number;
  failed: number;
}

export interface DemoReport {
  lines: string[];
  summary: DemoSummary;
  problems: string[];
}

export function reviewDemoRun(
  deliveries: readonly SimulatorDeliveryRecord[],
  audit: readonly ProcessedEvent[],
  order: Pick<Order, 'status' | 'fulfilments'>,
): DemoReport {
  const summary: DemoSummary = { handled: 0, duplicatesIgnored: 0, lateIgnored: 0, failed: 0 };
  const lines: string[] = [];
  const outcomeOf = new Map(audit.map((e) => [e.eventId, e.outcome]));
  let succeededSeen = false;

  deliveries.forEach((d, i) => {
    // The simulator's delivery log keeps what the module answered to each attempt.
    const status = d.status;
    const duplicateAnswer = /"duplicate"\s*:\s*true/.test(d.responseBody ?? '');
    const late = succeededSeen && /\.(created|pending)$/.test(d.eventType);
    const head = `   ${String(i + 1).padStart(2)}. ${d.eventType.padEnd(17)} ${d.eventId}  attempt ${d.attempt}${d.duplicate ? ', duplicate copy' : ''}`;
    let text: string;
    if (status === undefined || status < 200 || status >= 300) {
      summary.failed++;
      text = `→ ${status ?? d.error ?? 'no answer'}: not handled, the service will retry`;
    } else if (duplicateAnswer) {
      summary.duplicatesIgnored++;
      text = `→ ${status} ${d.responseBody}: duplicate ignored by the module, no handler ran`;
    } else {
      summary.handled++;
      const outcome = outcomeOf.get(d.eventId) ?? '(no audit row)';
      if (late) summary.lateIgnored++;
      text = `→ ${status} handled: ${outcome}${late ? ' (arrived out of order: ignored for the order state)' : ''}`;
    }
    if (d.eventType === 'payment.succeeded' && status !== undefined && status >= 200 && status < 300) succeededSeen = true;
    lines.push(`${head}\n       ${text}`);
  });

  const problems: string[] = [];
  if (order.status !== 'PAID') problems.push(`order is ${order.status}, expected PAID`);
  if (order.fulfilments !== 1) problems.push(`order fulfilled ${order.fulfilments} times, expected exactly 1`);
  if (summary.duplicatesIgnored === 0) problems.push('no duplicate delivery was answered duplicate: true');
  if (summary.lateIgnored === 0) problems.push('no out-of-order event was seen');
  if (summary.failed > 0) problems.push(`${summary.failed} deliveries were not answered 2xx`);
  return { lines, summary, problems };
}
