/**
 * A path the client may append to the API base: one leading `/`, no `//` (a `//host` path
 * leaves the base), no query, fragment, spaces or backslashes, and no dot segment, also
 * percent-encoded (`%2e%2E`, which the URL parser decodes): the request carries the bearer token.
 */
export function isApiPath(value: unknown): value is string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.includes('//') || /[\s?#\\]/.test(value)) return false;
  return !value.split('/').some((segment) => ['.', '..'].includes(segment.replace(/%2e/gi, '.')));
}
