import { isMissingPackage, peerRequire } from '../common/optional-peer.util.js';
import { BullMqMissingError } from './payment-queue.errors.js';

/*
 * The part of BullMQ the queue mode uses, typed structurally: `bullmq` is an optional peer,
 * so the package's declarations must not depend on its types.
 */

/** Options of one job (see BullMQ's `JobsOptions`). */
export interface BullJobOptions {
  jobId?: string;
  /** Creation time, epoch ms (BullMQ's default: now). */
  timestamp?: number;
  attempts?: number;
  backoff?: { type: 'exponential' | 'fixed'; delay: number; jitter?: number };
  removeOnComplete?: boolean | number | { age?: number; count?: number };
  removeOnFail?: boolean | number | { age?: number; count?: number };
  stackTraceLimit?: number;
  /**
   * The module's own: how long the job is kept once it failed for good (ms). BullMQ stores
   * unknown options in the job's hash as they are and does not act on them.
   */
  paymentDeadLetterRetentionMs?: number;
  /** The module's own: a mark unique to the delivery that added the job (see `queued-job-state.ts`). */
  paymentDeliveryId?: string;
}

export interface BullJob<T> {
  readonly id?: string;
  readonly name: string;
  readonly data: T;
  readonly opts: BullJobOptions;
  /** Finished attempts (failed ones, plus the completing one). */
  readonly attemptsMade: number;
  readonly failedReason?: string;
  /** Times the job was found stalled (its lock lapsed while active): BullMQ's `stc`. */
  readonly stalledCounter?: number;
  /** Time the job was added, epoch ms. */
  readonly timestamp: number;
  /** Set when a worker took the job (again on each attempt). */
  readonly processedOn?: number;
  /** Set when the job reached the completed or failed set. */
  readonly finishedOn?: number;
  getState(): Promise<string>;
  retry(state?: 'failed' | 'completed', opts?: { resetAttemptsMade?: boolean; resetAttemptsStarted?: boolean }): Promise<void>;
  remove(): Promise<void>;
  /** Replaces the job's data in Redis (and here). */
  updateData(data: T): Promise<void>;
  /** Puts the running job back in the delayed set without using an attempt. */
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
}

export interface BullQueue<T> {
  readonly name: string;
  add(name: string, data: T, opts?: BullJobOptions): Promise<BullJob<T>>;
  getJob(jobId: string): Promise<BullJob<T> | undefined>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  close(): Promise<void>;
}

export interface BullWorker<T> {
  on(event: 'completed', listener: (job: BullJob<T>) => void): unknown;
  on(event: 'failed', listener: (job: BullJob<T> | undefined, error: Error) => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** Stops fetching; without `doNotWaitActive`, resolves once running jobs finished (and the blocking connection is back). */
  pause(doNotWaitActive?: boolean): Promise<void>;
  /** `force`: return at once, leaving running jobs to the stalled-job check of other workers. */
  close(force?: boolean): Promise<void>;
}

export type BullProcessor<T> = (job: BullJob<T>, token?: string) => Promise<unknown>;

export interface BullMqModule {
  Queue: new <T>(name: string, opts: Record<string, unknown>) => BullQueue<T>;
  Worker: new <T>(name: string, processor: BullProcessor<T>, opts: Record<string, unknown>) => BullWorker<T>;
  /** Thrown by a processor that moved its job to the delayed set itself. */
  DelayedError: new (message?: string) => Error;
  /** Thrown by a processor to fail its job at once, without its remaining attempts. */
  UnrecoverableError: new (message?: string) => Error;
}

/**
 * Loads `bullmq` (and checks for `ioredis`, an optional peer of bullmq 6 it needs) only
 * when an account runs in queue mode, so the inline mode works without either.
 * @internal `moduleNames` is for tests
 */
export function loadBullMq(
  moduleNames: { bullmq: string; ioredis: string } = { bullmq: 'bullmq', ioredis: 'ioredis' },
  /** Who asked, for the error: the account and where its `processing` came from. */
  context: { account?: string; setting?: string } = {},
): BullMqModule {
  const load = peerRequire();
  const missing: string[] = [];
  let cause: unknown;
  // `undefined` when the package itself is missing (noted); a broken install inside it throws as is
  const attempt = <T>(name: string, run: () => T): T | undefined => {
    try {
      return run();
    } catch (error) {
      if (!isMissingPackage(error, name)) throw error;
      missing.push(name);
      cause ??= error;
      return undefined;
    }
  };
  attempt(moduleNames.ioredis, () => load.resolve(moduleNames.ioredis));
  const mod: any = attempt(moduleNames.bullmq, () => load(moduleNames.bullmq));
  if (missing.length > 0) throw new BullMqMissingError(missing, { cause, ...context });
  if (typeof mod?.Queue !== 'function' || typeof mod?.Worker !== 'function' || typeof mod?.DelayedError !== 'function' || typeof mod?.UnrecoverableError !== 'function') {
    throw new BullMqMissingError([moduleNames.bullmq], context);
  }
  return mod as BullMqModule;
}
