import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * Optional peer dependencies (ioredis, bullmq) are loaded only when the options ask for
 * them, so the package works without them.
 */

/** What loads an optional peer: `load(name)` and `load.resolve(name)`. */
export interface PeerRequire {
  (name: string): any;
  resolve(name: string): string;
}

/**
 * The `require` that loads an optional peer. The CommonJS build has its own, which resolves
 * from the package's place in node_modules. The ES module build (and the ESM test run) has
 * none, and its own URL cannot be named in source compiled to both (`import.meta` is not
 * CommonJS): it looks from its own file as a stack trace names it (where the package is
 * installed: a monorepo library's own node_modules), then from the app's entry script
 * (whatever the working directory), then from the working directory.
 */
export function peerRequire(): PeerRequire {
  if (typeof require === 'function') return require;
  const bases = [ownFile(), process.argv[1], join(process.cwd(), 'noop.js')].filter((base): base is string => typeof base === 'string' && base !== '');
  const requires = bases.map((base) => createRequire(base));
  const first = <T>(name: string, use: (load: NodeJS.Require) => T): T => {
    let missing: unknown;
    for (const load of requires) {
      try {
        return use(load);
      } catch (error) {
        if (!isMissingPackage(error, name)) throw error;
        missing ??= error;
      }
    }
    throw missing;
  };
  const load = ((name: string) => first(name, (r) => r(name))) as PeerRequire;
  load.resolve = (name: string) => first(name, (r) => r.resolve(name));
  return load;
}

/** True when `error` says the package `name` itself is not installed; a broken install inside it is another error. */
export function isMissingPackage(error: unknown, name: string): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${name}'`);
}

/**
 * This module's file, from the `file:` URL of the top frame of a stack trace (this function's own),
 * taken with V8's own formatting and one frame whatever the app set (a host's `prepareStackTrace`
 * may print plain paths or drop library frames); `undefined` when it has none.
 */
function ownFile(): string | undefined {
  const v8 = Error as { stackTraceLimit: number; prepareStackTrace?: unknown };
  const { stackTraceLimit, prepareStackTrace } = v8;
  let stack: string | undefined;
  try {
    v8.stackTraceLimit = 1;
    v8.prepareStackTrace = undefined;
    stack = new Error().stack;
  } finally {
    v8.stackTraceLimit = stackTraceLimit;
    v8.prepareStackTrace = prepareStackTrace;
  }
  const frame = /(file:\/\/[^\s)]+?):\d+:\d+/.exec(stack ?? '');
  if (frame === null) return undefined;
  try {
    return fileURLToPath(frame[1]!);
  } catch {
    return undefined;
  }
}
