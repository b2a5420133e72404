import { errorMessage } from '../common/error-message.util.js';
import { REDACTED } from '../common/redaction.util.js';

/** Text that starts as a URL does (`scheme://`): one read into another key may carry a password. */
export const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Query parameters that carry a credential: ioredis reads every query parameter as an
 * option, so any name containing one of these words counts (`sentinelPassword`, `authToken`).
 */
const SECRET_QUERY_PARAM = /password|pass|pwd|secret|token|auth/i;

/**
 * A Redis URL safe to print: the password (in the user-info part or a `?password=`
 * query parameter) is replaced by `[redacted]`; scheme, user name (when a password
 * follows it), host, port, db and other query parameters stay readable. The URL is parsed, not pattern-matched, so a
 * password containing `@` or `:` is removed whole. Text that does not parse as a URL,
 * or whose path is not a db number, is replaced entirely: it may hold a secret that is
 * merely malformed (an unencoded `/` in a password ends the user-info part).
 */
export function redactRedisUrl(url: string): string {
  if (typeof url !== 'string' || url === '') return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${REDACTED} (unparsable URL)`;
  }
  switch (misplacedPasswordTail(parsed)) {
    case 'path':
      return `${REDACTED} (URL with an unexpected path)`;
    case 'query':
      return `${REDACTED} (URL with user info in its query)`;
  }
  // Built by hand: assigning to URL.password would percent-encode the brackets. A user
  // name without a password may be a password written without the leading ':'.
  let userInfo = '';
  if (parsed.password !== '') userInfo = `${parsed.username}:${REDACTED}@`;
  else if (parsed.username !== '') userInfo = `${REDACTED}@`;
  const query = [...parsed.searchParams]
    .map(([key, value]) => `${encodeURIComponent(key)}=${SECRET_QUERY_PARAM.test(key) ? REDACTED : encodeURIComponent(value)}`)
    .join('&');
  const authority = parsed.host !== '' || userInfo !== '' ? `//${userInfo}${parsed.host}` : '';
  return `${parsed.protocol}${authority}${parsed.pathname}${query ? `?${query}` : ''}`;
}

/**
 * Where a password's tail landed when it held an unencoded character that ends the user info:
 * `'path'` (a `/`: the path of a Redis URL is a db number, so `/w0rd@host` is not one) or
 * `'query'` (a `?` or `#`: an `@` past the authority). `undefined` for a well-formed URL.
 */
export function misplacedPasswordTail(parsed: URL): 'path' | 'query' | undefined {
  if (!/^(\/\d*)?$/.test(parsed.pathname)) return 'path';
  if (parsed.search.includes('@') || parsed.hash.includes('@')) return 'query';
  return undefined;
}

/**
 * The part of a parsed Redis URL that ioredis cannot percent-decode (a `%` not followed by two
 * hex digits): `'user name'`, `'password'` or a credential query parameter (`query parameter
 * 'password'`). ioredis decodes the user info with `decodeURIComponent` and throws `URI
 * malformed` at boot; a query value would be decoded leniently, so `%41` and a bare `%` mean
 * different things there. `undefined` when all of them decode. Never returns a value.
 */
export function undecodableRedisUrlPart(parsed: URL): string | undefined {
  if (!decodes(parsed.username)) return 'user name';
  if (!decodes(parsed.password)) return 'password';
  // the raw query: URLSearchParams has already decoded (leniently) what searchParams holds
  for (const pair of parsed.search.slice(1).split('&')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const key = new URLSearchParams(pair).keys().next().value ?? '';
    if (SECRET_QUERY_PARAM.test(key) && !decodes(pair.slice(eq + 1).replace(/\+/g, ' '))) return `query parameter '${key}'`;
  }
  return undefined;
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * `text` with every secret of `url` removed: the whole URL (replaced by its redacted
 * form) and its password, raw and percent-decoded (for messages of libraries that
 * echo the parsed parts).
 */
export function redactRedisUrlIn(text: string, url: string): string {
  if (!text || !url) return text;
  let out = text.split(url).join(redactRedisUrl(url));
  for (const secret of redisUrlSecrets(url)) out = out.split(secret).join(REDACTED);
  return out;
}

/** Describes errors of a client of `url` (its message, without the URL's secrets), for logs. */
export function redisErrorDescriber(url: string): (error: unknown) => string {
  return (error) => redactRedisUrlIn(errorMessage(error), url);
}

/** The password and credential query values of a Redis URL, raw and percent-decoded (of `minLength` characters or more). */
export function redisUrlSecrets(url: string, minLength = 3): string[] {
  const secrets = new Set<string>();
  try {
    const parsed = new URL(url);
    const values = [parsed.password, ...[...parsed.searchParams].filter(([key]) => SECRET_QUERY_PARAM.test(key)).map(([, v]) => v)];
    for (const value of values) {
      if (!value) continue;
      secrets.add(value);
      try {
        secrets.add(decodeURIComponent(value));
      } catch {
        // not percent-encoded text: the raw form is enough
      }
    }
  } catch {
    // unparsable: the whole URL was already replaced
  }
  // very short values would blank out unrelated text (where they are removed from it)
  return [...secrets].filter((s) => s.length >= minLength);
}
