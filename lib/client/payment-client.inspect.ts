import { inspect, type InspectOptions } from 'node:util';

/**
 * `util.inspect` output of a client object: its class name and a summary that holds no
 * token or secret. The client's classes return this from `[inspect.custom]` (and the
 * summary from `toJSON`), so logging or dumping them never prints a bearer token.
 */
export function inspectSummary(name: string, summary: object, depth: number, options: InspectOptions): string {
  if (depth < 0) return `[${name}]`;
  return `${name} ${inspect(summary, { ...options, depth: options.depth == null ? null : options.depth - 1 })}`;
}
