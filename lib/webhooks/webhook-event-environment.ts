/** The `environment` of live events (every other value is a sandbox's). */
const LIVE_EVENT_ENVIRONMENT = 'production';

/**
 * Whether an event belongs to the other environment than its account: a live account takes only
 * `production` events, a sandbox account never takes them. An event without `environment` (or
 * with another type) is not judged: refusing it would lose a signed event over a detail.
 * The route answers such an event 2xx unrun; a queue worker hands it back unrun.
 */
export function isFromOtherEnvironment(environment: unknown, accountIsLive: boolean): boolean {
  if (typeof environment !== 'string') return false;
  return accountIsLive ? environment !== LIVE_EVENT_ENVIRONMENT : environment === LIVE_EVENT_ENVIRONMENT;
}
