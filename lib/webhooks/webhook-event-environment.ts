/** The `environment` of live events (every other value is a sandbox's). */
const LIVE_EVENT_ENVIRONMENT = 'production';

/**
 * Whether an event belongs to the other environment than its account: a live account takes only
 * `production` events, a sandbox account never takes them. An event without `environment` (or
 * with another type, or blank) is not judged: refusing it would lose a signed event over a detail;
 * for the same reason case and surrounding spaces do not count (`Production`).
 * The route answers an event of the other environment 2xx unrun; a queue worker hands it back unrun.
 */
export function isFromOtherEnvironment(environment: unknown, accountIsLive: boolean): boolean {
  if (typeof environment !== 'string' || environment.trim() === '') return false;
  const live = environment.trim().toLowerCase() === LIVE_EVENT_ENVIRONMENT;
  return accountIsLive ? !live : live;
}
