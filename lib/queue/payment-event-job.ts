import { hash } from 'node:crypto';
import { prepareReceivedEvent, withoutModuleFields } from '../events/received-payment-event.js';
import type { AnyPaymentEvent, PaymentEventEnvelope } from '../events/payment-event.types.js';
import type { QueuedTraceParent } from '../telemetry/queue-job.telemetry.js';
import type { BullJob } from './bullmq.loader.js';
import type { PaymentDeadLetter } from './payment-dead-letter.interface.js';

/** What one job carries: the verified event as received, and when and for whom it was received. */
export interface PaymentEventJobData {
  /** Layout version of this record, so a later release can read jobs queued by this one. */
  v: 1;
  account: string;
  /** The verified webhook body (JSON) without module fields. */
  event: PaymentEventEnvelope;
  /** ISO 8601 time the route accepted the event. */
  receivedAt: string;
  /** The delivery's span (a replay's, once replayed) when the host traces, so the worker's spans join its trace. */
  trace?: QueuedTraceParent;
}

export type PaymentEventJob = BullJob<PaymentEventJobData>;

/** How the id of every job this module writes begins. */
export const PAYMENT_EVENT_JOB_ID_PREFIX = 'evt-';

/**
 * Lua: `isPaymentEventJobId(id, prefix)`, whether a job id has the shape `paymentEventJobId` gives
 * (the prefix, then the 43 base64url characters of a SHA-256). Scripts that walk the failed set
 * tell the module's jobs from another producer's by it: `evt-order-1` is not one.
 */
export const LUA_IS_PAYMENT_EVENT_JOB_ID = `local function isPaymentEventJobId(id, prefix)
  return #id == #prefix + 43 and string.sub(id, 1, #prefix) == prefix and string.find(id, '^[%w_%-]+$', #prefix + 1) ~= nil
end`;

/**
 * The job id of an event: the same for every copy of it, so a duplicate delivery finds the
 * existing job instead of adding one. A hash of account and `eventId`: BullMQ refuses ids
 * with ':' (but exactly two) and integer ids, and an `eventId` may be either.
 */
export function paymentEventJobId(account: string, eventId: string): string {
  // one-shot hash (a third of createHash's cost); the same bytes: ids are well-formed Unicode
  return `${PAYMENT_EVENT_JOB_ID_PREFIX}${hash('sha256', `${account}\0${eventId}`, 'base64url')}`;
}

/**
 * The job of a verified event. A signed body's own `account`, `canonicalStatus` or `receivedAt`
 * is left out: the worker sets those, and a dead letter must show the account and time the
 * module recorded, not the body's.
 */
export function toPaymentEventJobData(account: string, event: AnyPaymentEvent, receivedAt: Date, parent?: QueuedTraceParent): PaymentEventJobData {
  const data: PaymentEventJobData = { v: 1, account, event: withoutModuleFields(event), receivedAt: receivedAt.toISOString() };
  if (parent !== undefined) data.trace = parent;
  return data;
}

/** Makes `parent` the trace parent of the job's next runs (none when `undefined`): a replay's own. */
export async function setJobTraceParent(job: PaymentEventJob, parent: QueuedTraceParent | undefined): Promise<void> {
  if (job.data.trace === undefined && parent === undefined) return; // nothing to change: no round trip
  const data: PaymentEventJobData = { ...job.data };
  delete data.trace;
  if (parent !== undefined) data.trace = parent;
  await job.updateData(data);
}

/**
 * The event handlers receive: a fresh copy of the stored body with the module fields set. The
 * account is the one whose queue holds the job (a job's own field could have been edited), and
 * a `receivedAt` that is no time is the time the worker took it.
 */
export function toReceivedPaymentEvent(data: PaymentEventJobData, account: string): AnyPaymentEvent {
  const event = structuredClone(data.event) as AnyPaymentEvent;
  return prepareReceivedEvent(event, account, receivedAtOf(data, () => new Date()));
}

/** The job's `receivedAt`, or `fallback()` when what is stored there is no time (an edited or foreign job). */
function receivedAtOf(data: PaymentEventJobData, fallback: () => Date): Date {
  const receivedAt = new Date(data.receivedAt);
  return Number.isNaN(receivedAt.getTime()) ? fallback() : receivedAt;
}

/**
 * When a failed job stops being a dead letter: its failure time plus the retention it was
 * added with (`paymentDeadLetterRetentionMs`, else the `removeOnFail` age of a job queued
 * before that option), else `fallbackRetentionMs`. The trim's script reads the same fields.
 */
function deadLetterExpiresAt(job: PaymentEventJob, fallbackRetentionMs: number): number {
  const own = job.opts.paymentDeadLetterRetentionMs;
  const removeOnFail = job.opts.removeOnFail;
  const age = typeof removeOnFail === 'object' && removeOnFail !== null ? removeOnFail.age : undefined;
  const retentionMs = typeof own === 'number' ? own : typeof age === 'number' ? age * 1000 : fallbackRetentionMs;
  return deadLetterFailedAt(job) + retentionMs;
}

function deadLetterFailedAt(job: PaymentEventJob): number {
  return job.finishedOn ?? job.timestamp;
}

/** The dead letter of a failed job of `account`'s queue (the queue's account, whatever the job's data says). */
export function toPaymentDeadLetter(job: PaymentEventJob, account: string, retentionMs: number): PaymentDeadLetter {
  const data = job.data;
  const failedAt = new Date(deadLetterFailedAt(job));
  return {
    account,
    eventId: data.event.eventId,
    eventType: data.event.eventType,
    // jobs queued before 0.2 kept a body's own module fields
    event: withoutModuleFields(data.event as AnyPaymentEvent),
    attempts: job.attemptsMade,
    lastError: job.failedReason ?? '',
    receivedAt: receivedAtOf(data, () => failedAt),
    failedAt,
    expiresAt: new Date(deadLetterExpiresAt(job, retentionMs)),
  };
}

/** Which failure of a job this is: a replayed job that failed again was taken and finished later. */
export function jobFailureMark(job: PaymentEventJob): string {
  return `${job.processedOn ?? ''}:${job.finishedOn ?? ''}`;
}

/** A job this module wrote (a foreign job in the same queue is never reported or moved). */
export function isPaymentEventJob(job: PaymentEventJob): boolean {
  const data = job.data as Partial<PaymentEventJobData> | undefined;
  return data?.v === 1 && typeof data.event?.eventId === 'string';
}

/**
 * A job a later release of this module wrote (a layout version above 1): during a rolling
 * upgrade an older worker may fetch it. It must not fail (its delivery was answered 2xx) nor
 * run with a layout this version cannot read: it goes back to the queue for a newer worker.
 */
export function isNewerPaymentEventJob(job: PaymentEventJob): boolean {
  const data = job.data as { v?: unknown; event?: { eventId?: unknown } } | undefined;
  return typeof data?.v === 'number' && Number.isInteger(data.v) && data.v > 1 && typeof data.event?.eventId === 'string';
}
