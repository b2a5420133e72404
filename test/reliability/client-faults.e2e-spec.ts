import 'reflect-metadata';
import type { SimulatorFault } from '../../lib/testing/index.js';
import { seededRandom } from '../support/reliability-app.js';
import { startClientHarness, type ClientHarness } from '../support/client-simulator.js';

const STATUS = '/payment/status';
const CREATE = '/payment/create';
const REFUND = /^\/payment\/[^/]+\/refund$/;
const recipient = { account_number: '0123456789' };

type FaultSpec = Omit<SimulatorFault, 'path' | 'method'>;

/** Faults a call may meet; `stall` lasts past the client's time-out. */
const READ_FAULTS: FaultSpec[] = [
  { kind: 'status', status: 429, retryAfterSeconds: 2 },
  { kind: 'status', status: 500 },
  { kind: 'status', status: 503 },
  { kind: 'reset' },
  { kind: 'stall' },
];
/** Faults after which the service HAS acted but the answer was lost. */
const AFTER_ACTING: FaultSpec[] = [
  { kind: 'reset', afterHandling: true },
  { kind: 'stall', afterHandling: true },
  { kind: 'status', status: 500, afterHandling: true },
];
/** The same for payment creation, whose retryable answer is PAY_5002 (spec 7.1: retry with the same key). */
const CREATE_AFTER_ACTING: FaultSpec[] = [
  { kind: 'reset', afterHandling: true },
  { kind: 'stall', afterHandling: true },
  { kind: 'status', code: 'PAY_5002', afterHandling: true },
  { kind: 'status', status: 502, code: 'HTTP_502', afterHandling: true },
];

describe('reliability: the client under a mix of service faults (simulator)', () => {
  let h: ClientHarness;
  const random = seededRandom(66);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

  beforeAll(async () => {
    // a short time-out keeps stalls cheap (but leaves room for a loaded machine); rate limits stay on (the client queues)
    h = await startClientHarness({ httpTimeoutMs: 600, maxRetries: 3 });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('status reads succeed through 429 + Retry-After, 5xx, resets and stalls', async () => {
    const { trxId } = await h.client.createPayment({ amount: '20', currency: 'USD' });
    let injected = 0;
    for (let i = 0; i < 30; i++) {
      // up to 3 faults in a row: within maxRetries, so every read must end well
      const faults = Math.floor(random() * 4);
      for (let f = 0; f < faults; f++) h.sim.injectFault({ method: 'GET', path: STATUS, ...pick(READ_FAULTS) });
      injected += faults;
      const before = h.calls(STATUS).length;
      await expect(h.client.getPaymentStatus(trxId!)).resolves.toMatchObject({ trxId, status: 'PENDING' });
      // every fault cost one attempt (a slow machine may add a time-out of its own)
      expect(h.calls(STATUS).length - before).toBeGreaterThanOrEqual(faults + 1);
    }
    expect(injected).toBeGreaterThan(20);
  }, 90_000);

  it('createPayment under faults after the service acted: one payment per idempotency key', async () => {
    const before = h.sim.payments.length;
    const keys: string[] = [];
    for (let i = 0; i < 12; i++) {
      h.sim.injectFault({ method: 'POST', path: CREATE, ...pick(CREATE_AFTER_ACTING), times: 1 + Math.floor(random() * 2) });
      const payment = await h.client.createPayment({ amount: '9.99', currency: 'USD', custom: `order-${i}` }, { idempotencyKey: `rel-order-${i}` });
      keys.push(payment.idempotencyKey);
    }
    const created = h.sim.payments.slice(before);
    expect(created).toHaveLength(12);
    expect(created.map((p) => p.idempotencyKey).sort()).toEqual([...keys].sort());
    // every retry reused the caller's key
    for (const key of keys) {
      const sent = h.calls(CREATE, 'POST').filter((r) => (r.body as { idempotency_key?: string })?.idempotency_key === key);
      expect(sent.length).toBeGreaterThanOrEqual(2);
    }
  }, 60_000);

  it('refunds and payouts are never sent twice when the service may have acted', async () => {
    const refundsBefore = h.sim.refunds.length;
    const payoutsBefore = h.sim.payouts.length;
    const payoutCallsBefore = h.calls('/payout', 'POST').length;
    const trxIds: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { trxId } = await h.client.createPayment({ amount: '30', currency: 'USD' });
      h.sim.completePayment(trxId!, 'SUCCESS');
      trxIds.push(trxId!);
    }
    let failedRefunds = 0;
    for (const trxId of trxIds) {
      const faulted = random() < 0.6;
      if (faulted) h.sim.injectFault({ method: 'POST', path: REFUND, ...pick(AFTER_ACTING), times: 3 });
      await h.client.refundPayment(trxId, { amount: '10' }).catch(() => failedRefunds++);
      h.sim.clearFaults();
      // one request reached the service for this payment, and it acted once
      expect(h.calls(`/payment/${trxId}/refund`, 'POST')).toHaveLength(1);
      expect(h.sim.refunds.filter((r) => r.trxId === trxId)).toHaveLength(1);
    }
    expect(failedRefunds).toBeGreaterThan(0);
    expect(h.sim.refunds.length - refundsBefore).toBe(trxIds.length);

    let failedPayouts = 0;
    for (let i = 0; i < 8; i++) {
      if (random() < 0.6) h.sim.injectFault({ method: 'POST', path: '/payout', ...pick(AFTER_ACTING), times: 3 });
      await h.client.createPayout({ amount: '5', currency: 'USD', recipient, reference: `rel-payout-${i}` }).catch(() => failedPayouts++);
      h.sim.clearFaults();
    }
    expect(failedPayouts).toBeGreaterThan(0);
    expect(h.calls('/payout', 'POST').length - payoutCallsBefore).toBe(8);
    expect(h.sim.payouts.length - payoutsBefore).toBe(8);
  }, 60_000);
});
