import { createRequire } from 'node:module';
import { join } from 'node:path';

/*
 * Optional peer dependencies (ioredis, bullmq) are loaded only when the options ask for
 * them, so the package works without them.
 */

/**
 * The `require` that loads an optional peer: the CommonJS build's own; the ES module build
 * (and the ESM test run) has none, so one resolving from the working directory, the app's.
 */
export function peerRequire(): NodeJS.Require {
  return typeof require === 'function' ? require : createRequire(join(process.cwd(), 'noop.js'));
}

/** True when `error` says the package `name` itself is not installed; a broken install inside it is another error. */
export function isMissingPackage(error: unknown, name: string): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${name}'`);
}
