import { createRequire } from 'node:module';
import { join } from 'node:path';

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
 * none, and its own URL cannot be named in source compiled to both: it looks where the app
 * is, first from the app's entry script (whatever the working directory), then from the
 * working directory.
 */
export function peerRequire(): PeerRequire {
  if (typeof require === 'function') return require;
  const bases = [process.argv[1], join(process.cwd(), 'noop.js')].filter((base): base is string => typeof base === 'string' && base !== '');
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
