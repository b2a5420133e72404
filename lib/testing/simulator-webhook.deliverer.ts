import type { PaymentEventEnvelope } from '../events/payment-event.types.js';
import { SimulatorWebhookPoster } from './simulator-webhook.poster.js';
import { signWebhookPayload } from './webhook-signing.js';
import type {
  SimulatorDeliveryFaults,
  SimulatorDeliveryRecord,
  SimulatorDeliveryState,
} from './simulator.types.js';
// node:timers, not the globals: jest's fake timers replace those, and the simulator runs on real time
import { clearTimeout, setTimeout } from 'node:timers';

/** The service retries a failed delivery after 5 min, 15 min, 1 h, 4 h and 24 h (attempts 2…6). @publicApi */
export const SPEC_RETRY_DELAYS_MS: readonly number[] = Object.freeze([5 * 60_000, 15 * 60_000, 3_600_000, 4 * 3_600_000, 24 * 3_600_000]);
/** After 6 failed attempts a delivery is abandoned (the portal can re-trigger it). @publicApi */
export const SPEC_MAX_ATTEMPTS = 6;

/** Delivery states that `stop()` ends. */
const UNFINISHED_STATES: ReadonlySet<SimulatorDeliveryState['state']> = new Set(['queued', 'in-flight', 'retry-scheduled', 'held', 'paused']);

/** What the deliverer needs to know about a merchant at send time. */
export interface DeliveryTarget {
  merchantId: number;
  webhookUrl?: string;
  webhookSecret: string;
}

interface EventEntry {
  state: SimulatorDeliveryState;
  envelope: PaymentEventEnvelope;
  body: string;
  resourceKey: string;
  /** Re-triggers so far: they are numbered after the schedule's 6 attempts (7, 8, ...). */
  retriggers?: number;
  /** A scheduled retry is armed: a failed re-trigger leaves the event to it, not abandoned. */
  retryArmed?: boolean;
}

interface Job {
  eventId: string;
  attempt: number;
  /** Extra copies sent with this job (duplicate switch). */
  copies: number;
  concurrentCopies: boolean;
  /** Re-trigger: one attempt, no retry schedule; settles the caller's promise. */
  manual?: { sent(record: SimulatorDeliveryRecord): void; failed(error: Error): void };
}

export interface DelivererDeps {
  target(merchantId: number): DeliveryTarget | undefined;
  now(): number;
  signatureNow(): number;
  timeScale: number;
  timeoutMs: number;
}

/**
 * Sends events to merchants' webhook URLs, one request at a time per merchant in
 * emission order (so the out-of-order switch is the only source of disorder), with the
 * service's retry schedule scaled by `timeScale` on real timers.
 */
export class SimulatorWebhookDeliverer {
  readonly log: SimulatorDeliveryRecord[] = [];
  faults: SimulatorDeliveryFaults = {};
  private readonly entries = new Map<string, EventEntry>();
  private readonly queues = new Map<number, Job[]>();
  private readonly busy = new Set<number>();
  private readonly held = new Map<string, string[]>();
  /** Per merchant, the jobs that met no webhook URL: they go on when one is set again. */
  private readonly paused = new Map<number, Job[]>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Re-triggers not sent yet: stop() rejects them. */
  private readonly pendingRetriggers = new Set<{ reject: (error: Error) => void }>();
  private readonly poster: SimulatorWebhookPoster;
  private stopped = false;
  /** Counts stop()s: a run begun before one ends there, even when start() came before its answer. */
  private generation = 0;

  constructor(private readonly deps: DelivererDeps) {
    this.poster = new SimulatorWebhookPoster(deps.timeoutMs);
  }

  get states(): SimulatorDeliveryState[] {
    return [...this.entries.values()].map((e) => ({ ...e.state }));
  }

  /** Nothing queued, sending or waiting for a retry (held and paused events do not count). */
  get quiet(): boolean {
    return this.timers.size === 0 && this.busy.size === 0 && [...this.queues.values()].every((q) => q.length === 0);
  }

  get hasHeld(): boolean {
    return this.held.size > 0;
  }

  enqueue(envelope: PaymentEventEnvelope, merchantId: number, resourceKey: string): void {
    const target = this.deps.target(merchantId);
    const entry: EventEntry = {
      state: { eventId: envelope.eventId, eventType: envelope.eventType, merchantId, state: 'queued', attempts: 0 },
      envelope,
      body: JSON.stringify(envelope),
      resourceKey,
    };
    this.entries.set(envelope.eventId, entry);
    if (!target?.webhookUrl) {
      entry.state.state = 'no-url';
      return;
    }
    if (this.stopped) {
      // before the out-of-order hold: a held event would go out after a restart, and an
      // event emitted while stopped is `cancelled` like the deliveries stop() ended
      entry.state.state = 'cancelled';
      return;
    }
    const holdable = /\.(created|pending)$/.test(envelope.eventType);
    if (this.faults.outOfOrder && holdable) {
      entry.state.state = 'held';
      const list = this.held.get(resourceKey) ?? [];
      list.push(envelope.eventId);
      this.held.set(resourceKey, list);
      return;
    }
    this.push(merchantId, this.firstJob(envelope.eventId));
    this.release(resourceKey);
  }

  /** Sends every held event now (used when the test waits for quiet). */
  releaseAll(): void {
    for (const key of [...this.held.keys()]) this.release(key);
  }

  /** One more attempt of an event (portal re-trigger); resolves with its log record. */
  retrigger(eventId: string): Promise<SimulatorDeliveryRecord> {
    const entry = this.entries.get(eventId);
    if (!entry) return Promise.reject(new Error(`Unknown event ${eventId}`));
    if (!this.deps.target(entry.state.merchantId)?.webhookUrl) {
      return Promise.reject(new Error(`Merchant ${entry.state.merchantId} has no webhook URL`));
    }
    if (this.stopped) return Promise.reject(new Error('The simulator is stopped: start it before re-triggering'));
    entry.retriggers = (entry.retriggers ?? 0) + 1;
    const attempt = SPEC_MAX_ATTEMPTS + entry.retriggers;
    return new Promise((resolve, reject) => {
      // settled by its attempt, or rejected by stop(): a test awaiting it never hangs
      const pending = { reject };
      this.pendingRetriggers.add(pending);
      const settle = <T>(fn: (value: T) => void) => (value: T) => {
        this.pendingRetriggers.delete(pending);
        fn(value);
      };
      const manual = { sent: settle(resolve), failed: settle(reject) };
      this.push(entry.state.merchantId, { eventId, attempt, copies: 0, concurrentCopies: false, manual });
    });
  }

  /**
   * Ends every delivery not done yet: queued, in flight, waiting for a retry, held or paused
   * ones become `cancelled` (a `retrigger()` after a restart sends one again).
   */
  stop(): void {
    this.stopped = true;
    this.generation++;
    for (const entry of this.entries.values()) {
      if (UNFINISHED_STATES.has(entry.state.state)) entry.state.state = 'cancelled';
      // its timer is cleared below: a failed re-trigger after start() must not count on that retry
      entry.retryArmed = false;
    }
    for (const { reject } of this.pendingRetriggers) reject(new Error('The simulator was stopped before the re-trigger was sent'));
    this.pendingRetriggers.clear();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.poster.stop();
    this.queues.clear();
    this.held.clear();
    this.paused.clear();
    this.busy.clear();
  }

  /** Allows deliveries again after {@link stop} (the simulator was restarted). */
  resume(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.poster.resume();
  }

  /** The merchant has a webhook URL again: its paused deliveries go on, attempt numbers kept. */
  resumePaused(merchantId: number): void {
    const jobs = this.paused.get(merchantId);
    if (!jobs) return;
    this.paused.delete(merchantId);
    for (const job of jobs) {
      const entry = this.entries.get(job.eventId);
      if (entry) entry.state.state = 'queued';
      this.push(merchantId, job);
    }
  }

  private firstJob(eventId: string): Job {
    const d = this.faults.duplicate;
    const copies = d === true ? 1 : typeof d === 'number' && d > 0 ? Math.floor(d) : 0;
    return { eventId, attempt: 1, copies, concurrentCopies: !!this.faults.concurrentDuplicates };
  }

  private release(resourceKey: string): void {
    const ids = this.held.get(resourceKey);
    if (!ids) return;
    this.held.delete(resourceKey);
    for (const id of ids) {
      const entry = this.entries.get(id);
      if (!entry) continue;
      entry.state.state = 'queued';
      this.push(entry.state.merchantId, this.firstJob(id));
    }
  }

  private push(merchantId: number, job: Job): void {
    if (this.stopped) {
      // nothing is sent while stopped (enqueue() cancels new events itself): `cancelled`, not
      // a `queued` that no restart would ever send
      const entry = this.entries.get(job.eventId);
      if (entry && UNFINISHED_STATES.has(entry.state.state)) entry.state.state = 'cancelled';
      return;
    }
    const q = this.queues.get(merchantId) ?? [];
    q.push(job);
    this.queues.set(merchantId, q);
    this.pump(merchantId);
  }

  private pump(merchantId: number): void {
    if (this.stopped || this.busy.has(merchantId)) return;
    const job = this.queues.get(merchantId)?.shift();
    if (!job) return;
    this.busy.add(merchantId);
    const generation = this.generation;
    void this.run(merchantId, job).finally(() => {
      // after a stop() the merchant's turn is no longer this run's (stop() freed it)
      if (generation !== this.generation) return;
      this.busy.delete(merchantId);
      this.pump(merchantId);
    });
  }

  private async run(merchantId: number, job: Job): Promise<void> {
    // every stop() counts: a run begun before one has ended (nothing begins while stopped)
    const generation = this.generation;
    const ended = () => generation !== this.generation;
    const entry = this.entries.get(job.eventId);
    if (!entry) return;
    if (!this.deps.target(merchantId)?.webhookUrl) return this.pause(merchantId, entry, job);
    const wasDelivered = entry.state.state === 'delivered';
    entry.state.state = 'in-flight';
    if (!job.manual) entry.state.attempts = Math.max(entry.state.attempts, job.attempt);
    let original: SimulatorDeliveryRecord;
    if (job.concurrentCopies && job.copies > 0) {
      const all = await Promise.all([
        this.send(entry, job.attempt, false),
        ...Array.from({ length: job.copies }, () => this.send(entry, job.attempt, true)),
      ]);
      original = all[0];
    } else {
      original = await this.send(entry, job.attempt, false);
      for (let i = 0; i < job.copies && !ended(); i++) await this.send(entry, job.attempt, true);
    }
    if (ended()) return;
    const ok = original.status !== undefined && original.status >= 200 && original.status < 300;
    if (ok) {
      entry.state.state = 'delivered';
    } else if (job.manual) {
      // a failed re-trigger changes nothing in the schedule (a retry still armed stays armed), nor an earlier success
      entry.state.state = entry.retryArmed ? 'retry-scheduled' : wasDelivered ? 'delivered' : 'abandoned';
    } else if (job.attempt >= SPEC_MAX_ATTEMPTS) {
      entry.state.state = 'abandoned';
    } else {
      entry.state.state = 'retry-scheduled';
      entry.retryArmed = true;
      const delay = SPEC_RETRY_DELAYS_MS[job.attempt - 1] * this.deps.timeScale;
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        entry.retryArmed = false;
        this.push(merchantId, { eventId: job.eventId, attempt: job.attempt + 1, copies: 0, concurrentCopies: false });
      }, delay);
      this.timers.add(timer);
    }
    job.manual?.sent(original);
  }

  /**
   * The URL was removed after the event was emitted: the delivery waits without using an
   * attempt (a re-trigger fails, as it would have when asked).
   */
  private pause(merchantId: number, entry: EventEntry, job: Job): void {
    if (job.manual) {
      job.manual.failed(new Error(`Merchant ${merchantId} has no webhook URL`));
      return;
    }
    entry.state.state = 'paused';
    const jobs = this.paused.get(merchantId) ?? [];
    jobs.push(job);
    this.paused.set(merchantId, jobs);
  }

  private async send(entry: EventEntry, attempt: number, duplicate: boolean): Promise<SimulatorDeliveryRecord> {
    const target = this.deps.target(entry.state.merchantId);
    const url = target?.webhookUrl ?? '';
    const secret = this.faults.wrongSecret ?? target?.webhookSecret ?? '';
    let signature = '';
    let unsigned: string | undefined;
    try {
      signature = signWebhookPayload(entry.body, secret, { timestamp: Math.floor(this.deps.signatureNow() / 1000) });
    } catch (error) {
      // a test's signatureClock gave no usable time: a failed attempt with the reason, not an unhandled rejection
      unsigned = `not sent: ${error instanceof Error ? error.message : String(error)}`;
    }
    const record: SimulatorDeliveryRecord = {
      eventId: entry.envelope.eventId,
      eventType: entry.envelope.eventType,
      merchantId: entry.state.merchantId,
      attempt,
      url,
      signature,
      at: this.deps.now(),
      ...(duplicate ? { duplicate: true } : {}),
    };
    this.log.push(record);
    if (unsigned !== undefined) {
      record.error = unsigned;
      return record;
    }
    const outcome = await this.poster.post(url, entry.body, signature);
    if ('status' in outcome) {
      record.status = outcome.status;
      record.responseBody = outcome.body;
    } else {
      record.error = outcome.error;
    }
    return record;
  }
}
