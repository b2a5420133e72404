/*
 * Keys under which deliveries are remembered in the WebhookEventStore. Each account has
 * its own namespace, and keys chosen by a custom route (`@WebhookIdempotencyKey`) live
 * apart from the service's event ids, so a custom key equal to a real `eventId` can never
 * suppress that event. Account names cannot contain ':', so the layout is unambiguous.
 */

/** Key of a verified event of the service: `<account>:event:<eventId>`. */
export function webhookEventKey(account: string, eventId: string): string {
  return `${account}:event:${eventId}`;
}

/** Key chosen by a custom route's key function: `<account>:custom:<key>`. */
export function webhookCustomKey(account: string, key: string): string {
  return `${account}:custom:${key}`;
}
