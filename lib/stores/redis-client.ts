import { errorMessage } from '../common/error-message.util.js';
import { isMissingPackage, peerRequire } from '../common/optional-peer.util.js';
import { withTimeout } from '../common/promise-timeout.util.js';
import { PAYMENT_OPTION_DEFAULTS } from '../config/payment-options.defaults.js';
import { redactRedisUrl, redisErrorDescriber } from '../config/redact-url.js';
import { RedisClientMissingError } from './webhook-event-store.errors.js';

/*
 * The module's ioredis clients: loaded only when a Redis URL is configured (ioredis is an
 * optional peer), created fail-fast, and closed politely when possible.
 */

/** Default longest wait for one command (and for a connection): the `redisTimeoutMs` option's default. */
export const DEFAULT_REDIS_OPERATION_TIMEOUT_MS = PAYMENT_OPTION_DEFAULTS.redisTimeoutMs;

/**
 * How long a closing socket may take to end before it is destroyed (ioredis' own default is
 * 2 s, and the process cannot exit meanwhile). Also given to the connections BullMQ makes.
 * @internal
 */
export const REDIS_CLOSE_GRACE_MS = 200;

/** How long the key a health check writes lives (the store's and the queue's probes). @internal */
export const REDIS_HEALTH_KEY_TTL_MS = 10_000;

/**
 * The health check of the store and the queue, KEYS[1] the key, ARGV[1] its life in ms: a write
 * that expires soon, since Redis answers reads and PING while it refuses writes (maxmemory
 * reached under noeviction, a read-only replica), and then every delivery is refused 503.
 * @internal
 */
export const REDIS_HEALTH_WRITE_SCRIPT = "return redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])";

/**
 * The part of an ioredis client this store uses. Typed structurally so the
 * package's declarations do not depend on `ioredis`, an optional peer.
 * @publicApi
 */
export interface RedisClientLike {
  readonly status: string;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Used for reads when present (ioredis has it); without it the store reads through `eval`. */
  get?(key: string): Promise<string | null>;
  connect?(): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  once(event: string, listener: (...args: any[]) => void): unknown;
  on(event: string, listener: (...args: any[]) => void): unknown;
  removeListener(event: string, listener: (...args: any[]) => void): unknown;
}

/** The latest connection error of each client the module made, until it is ready again. */
const lastConnectionErrors = new WeakMap<RedisClientLike, unknown>();

function trackConnectionErrors(client: RedisClientLike): RedisClientLike {
  client.on('error', (error: unknown) => lastConnectionErrors.set(client, error));
  client.on('ready', () => lastConnectionErrors.delete(client));
  return client;
}

/**
 * `Redis is not connected (status: …)`, with why when the module made the client and it failed
 * to connect (a refused password, a refused connection): without it a health check or an admin
 * call only says "reconnecting". `describe` removes the URL's secrets from the reason.
 */
export function notConnectedReason(client: RedisClientLike, describe: (error: unknown) => string): string {
  const error = lastConnectionErrors.get(client);
  return `Redis is not connected (status: ${client.status})${error === undefined ? '' : `: ${describe(error)}`}`;
}

type RedisConstructor = new (url: string, options: Record<string, unknown>) => RedisClientLike;

/**
 * ioredis' `reconnectOnError`: a write refused `READONLY` means the connection reaches a primary
 * demoted to a replica (a failover behind one endpoint, as managed Redis does it); a new
 * connection reaches the new primary. The refused command is not sent again (`1`): it failed,
 * and its caller answers as for any Redis error (the service retries a 503).
 */
function reconnectOnReadOnly(error: Error): 1 | false {
  return typeof error?.message === 'string' && error.message.startsWith('READONLY') ? 1 : false;
}

/**
 * The same for the queue worker's connections, and the refused command is sent again (`2`) to the
 * new primary: refused `READONLY`, it wrote nothing (a script stops at its first write). Failed
 * instead, BullMQ's move of a job whose handlers succeeded to `completed` would count as a failed
 * attempt: on the last one a dead letter, and its alert, for an event that was handled.
 * @internal
 */
export function reconnectAndResendOnReadOnly(error: Error): 2 | false {
  return reconnectOnReadOnly(error) === 1 ? 2 : false;
}

/**
 * An ioredis client for the store: commands fail fast while Redis is down (no offline
 * queue, one retry, `timeoutMs` per command) and the client reconnects forever in the
 * background, at most every 2 s, so the store heals by itself. A `lazy` one opens no socket
 * until `connect()` or its first command (status `wait` until then).
 * @internal also used by the module's shared connections
 */
export function createFailFastRedisClient(url: string, timeoutMs: number = DEFAULT_REDIS_OPERATION_TIMEOUT_MS, lazy = false): RedisClientLike {
  const Redis = loadRedisConstructor();
  try {
    return trackConnectionErrors(new Redis(url, {
      lazyConnect: lazy,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      retryStrategy: (times: number) => Math.min(times * 100, 2000),
      reconnectOnError: reconnectOnReadOnly,
      // a socket that does not close when told to is destroyed after this (ioredis keeps the
      // process alive meanwhile, 2 s by default, even for a socket that died in an outage)
      disconnectTimeout: REDIS_CLOSE_GRACE_MS,
    }));
  } catch (error) {
    // not passed on as the cause: URL parse errors carry the whole URL (`input`), password included
    throw new TypeError(`RedisWebhookEventStore: cannot use the Redis URL ${redactRedisUrl(url)}: ${redisErrorDescriber(url)(error)}`);
  }
}

/**
 * Loads ioredis only when a store is built from a URL, so the package works
 * without it.
 * @internal exported for tests
 */
export function loadRedisConstructor(moduleName = 'ioredis'): RedisConstructor {
  let mod: any;
  try {
    mod = peerRequire()(moduleName);
  } catch (error) {
    if (isMissingPackage(error, moduleName)) throw new RedisClientMissingError({ cause: error });
    throw error;
  }
  const ctor = mod?.Redis ?? mod?.default ?? mod;
  if (typeof ctor !== 'function') throw new RedisClientMissingError();
  return ctor as RedisConstructor;
}

/**
 * A Redis error fit to be the `cause` of the module's errors: its name, `code` and message
 * (through `describe`, which removes the URL's secrets), nothing else. ioredis attaches the
 * command that failed (`command.args`), and when Redis refuses a connection that command is
 * its HELLO/AUTH, password included; a host's filter that inspects exceptions would print it.
 * @internal
 */
export function redisErrorCause(error: unknown, describe: (error: unknown) => string = errorMessage): Error {
  const safe = new Error(describe(error));
  if (error instanceof Error && typeof error.name === 'string') safe.name = error.name;
  const code: unknown = (error as { code?: unknown } | null | undefined)?.code;
  if (typeof code === 'string' || typeof code === 'number') Object.assign(safe, { code });
  return safe;
}

/**
 * How a wait for a connection ended: `ready`, or why not (the client ended, its first
 * attempt failed with `cause`, or `timeout`). `ready` also when the client was not connecting.
 */
export type RedisConnectionWait =
  | { readonly outcome: 'ready' | 'ended' | 'timeout' }
  | { readonly outcome: 'error'; readonly cause: Error };

const NOT_CONNECTING: RedisConnectionWait = Object.freeze({ outcome: 'ready' });

/** One wait per client, however many callers arrive while it connects (three listeners, not three per caller). */
const connectingWaits = new WeakMap<RedisClientLike, Promise<RedisConnectionWait>>();

/**
 * Why `client` cannot take a command now, once a connection under way was waited for
 * (`untilFirstConnected`); `undefined` when it is ready.
 */
export async function notReadyReason(client: RedisClientLike, timeoutMs: number, describe: (error: unknown) => string): Promise<string | undefined> {
  await untilFirstConnected(client, timeoutMs);
  return client.status === 'ready' ? undefined : notConnectedReason(client, describe);
}

/**
 * Resolves once `client` is ready when it is making a connection (status `wait`,
 * `connecting` or `connect`: at boot, or a reconnect attempt under way), at most after
 * `timeoutMs` or at its first error; at once otherwise, so a command on a client that is
 * waiting to reconnect fails fast as usual. A fail-fast client (no offline queue) refuses
 * commands while it connects, which right after boot would look like an outage.
 * Never rejects: the result says how the wait ended, for callers that explain a failure.
 */
export function untilFirstConnected(client: RedisClientLike, timeoutMs: number): Promise<RedisConnectionWait> {
  const connecting = client.status === 'wait' || client.status === 'connecting' || client.status === 'connect';
  if (!connecting) return Promise.resolve(NOT_CONNECTING);
  let wait = connectingWaits.get(client);
  if (wait === undefined) {
    wait = waitForConnection(client, timeoutMs).finally(() => connectingWaits.delete(client));
    connectingWaits.set(client, wait);
  }
  return wait;
}

/**
 * Starts the connection of a client that has not begun one (a lazy client: status `wait`); a
 * failed attempt reaches its `error` listeners, and the client retries by itself.
 * @internal
 */
export function startConnecting(client: RedisClientLike): void {
  if (client.status === 'wait') client.connect?.().catch(() => undefined);
}

function waitForConnection(client: RedisClientLike, timeoutMs: number): Promise<RedisConnectionWait> {
  startConnecting(client);
  return new Promise<RedisConnectionWait>((resolve) => {
    const done = (result: RedisConnectionWait) => {
      clearTimeout(timer);
      client.removeListener('ready', onReady);
      client.removeListener('end', onEnd);
      client.removeListener('error', onError);
      resolve(result);
    };
    const onReady = () => done({ outcome: 'ready' });
    const onEnd = () => done({ outcome: 'ended' });
    // a refused first connection: the caller's command then fails now, not after the time-out
    // (its cause without the AUTH command ioredis attaches: see redisErrorCause)
    const onError = (error: unknown) => done({ outcome: 'error', cause: redisErrorCause(error) });
    const timer = setTimeout(() => done({ outcome: 'timeout' }), timeoutMs);
    timer.unref?.();
    client.once('ready', onReady);
    client.once('end', onEnd);
    client.once('error', onError);
  });
}

/**
 * QUIT when connected (pending replies arrive first), within `timeoutMs`; otherwise, or when
 * QUIT fails, drops the socket.
 */
export async function closeRedisClient(client: RedisClientLike, timeoutMs: number = DEFAULT_REDIS_OPERATION_TIMEOUT_MS): Promise<void> {
  if (client.status === 'ready') {
    try {
      await withTimeout(client.quit(), timeoutMs, () => new Error(`Redis QUIT did not finish within ${timeoutMs} ms`));
      return;
    } catch {
      // fall through: drop the socket instead
    }
  }
  client.disconnect();
}
