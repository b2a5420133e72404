import { isRecord } from './is-record.util.js';
import { isWellFormedUnicode } from './well-formed-unicode.util.js';

/**
 * A path the client may append to the API base: one leading `/`, no `//` (a `//host` path
 * leaves the base), no query, fragment, spaces, backslashes or lone surrogates, and no dot segment, also
 * percent-encoded (`%2e%2E`, which the URL parser decodes): the request carries the bearer token.
 * No encoded slash or backslash either (`%2F`, `%5C`): a proxy that decodes them makes `..%2F..%2Fx`
 * dot segments after this check (the typed methods refuse `/` in ids for the same reason).
 */
export function isApiPath(value: unknown): value is string {
  if (typeof value !== 'string' || !value.startsWith('/') || value.includes('//') || /[\s?#\\]|%2f|%5c/i.test(value)) return false;
  // a lone surrogate would be sent as U+FFFD: another path than the one asked for
  if (!isWellFormedUnicode(value)) return false;
  return !value.split('/').some((segment) => ['.', '..'].includes(segment.replace(/%2e/gi, '.')));
}

/** Query parameters the client may send: string (well-formed Unicode, else not URL-encodable), number or boolean values. */
export function isApiQuery(value: unknown): boolean {
  return (
    isRecord(value) &&
    Object.entries(value).every(
      ([k, v]) => isWellFormedUnicode(k) && (v === undefined || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean' || (typeof v === 'string' && isWellFormedUnicode(v))),
    )
  );
}

/** Whether `path` is one of the paths `template` names: each `{placeholder}` segment stands for any one non-empty segment. */
export function matchesPathTemplate(path: string, template: string): boolean {
  const segments = path.split('/');
  const expected = template.split('/');
  return segments.length === expected.length && expected.every((t, i) => (/^\{[^/{}]+\}$/.test(t) ? segments[i] !== '' : t === segments[i]));
}
