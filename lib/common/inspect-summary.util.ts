import { inspect, type InspectOptions } from 'node:util';

/**
 * `util.inspect` output of an object that holds secrets or connections: its class name and a
 * summary that holds no token, secret or URL with a password. The client's classes, the
 * queue's and the Redis connections return this from `[inspect.custom]`, so logging or
 * dumping them (or anything that reaches them) never prints one.
 */
export function inspectSummary(name: string, summary: object, depth: number, options: InspectOptions): string {
  if (depth < 0) return `[${name}]`;
  return `${name} ${inspect(summary, { ...options, depth: options.depth == null ? null : options.depth - 1 })}`;
}
