import { REDACTED } from '../common/redaction.util.js';

/** Secrets shorter than this are redacted only where they stand alone (see `wordPattern`). */
const SHORT_SECRET_LENGTH = 4;

/**
 * A function giving a text without any of `secrets`, each also as sent in a form body or a URL
 * and inside a JSON string (a service echoing the request shows one of those forms),
 * percent-encoded (also twice) and HTML-escaped (by name or number), in any letter case and
 * either Unicode normal form (NFC, NFD), and base64-encoded within a longer text. A cut-short
 * echo stays readable. The patterns are built once (building them costs far more than running
 * them, and an error answer may hold many field messages).
 */
export function secretRedactor(secrets: Iterable<string | undefined>): (text: string) => string {
  const patterns: RegExp[] = [];
  // longest first: a secret inside another (a client secret within a token) must not cut the
  // longer one into pieces that then match nothing and stay readable around the marker
  // each in both Unicode normal forms too: an echo may have been normalised on its way back
  const given = [...secrets].filter((secret): secret is string => !!secret);
  const ordered = [...new Set(given.flatMap((secret) => [secret, secret.normalize('NFC'), secret.normalize('NFD')]))].sort((a, b) => b.length - a.length);
  for (const secret of ordered) {
    // as JSON.stringify writes it inside a string
    const json = JSON.stringify(secret).slice(1, -1);
    if (secret.length < SHORT_SECRET_LENGTH) {
      // as sent in a URL or a form; also as PHP's json_encode writes it: "/" as "\/", non-ASCII as \uXXXX
      const plainForms = [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)];
      const php = json.replace(/\//g, '\\/').replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      for (const form of new Set([...plainForms, json, php])) patterns.push(wordPattern(form));
      continue;
    }
    // every way a JSON encoder may write it inside a string; first, since an escaped secret can
    // hold the plain one (`\\\\x` holds `\\x`), which would leave its start readable
    patterns.push(new RegExp(jsonStringPattern(secret), 'gi'));
    // and as a URL, a form body or an error page shows it (a JSON echo inside a page too, tried
    // first as the longer), whatever the case (lower-case hex, an upper-cased message)
    const echoes = [...new Set([json, secret])].map(echoPattern);
    patterns.push(new RegExp(echoes.join('|'), 'gi'));
  }
  // base64 (a service echoing the Authorization header encoded): case matters there
  const encoded = given.flatMap(base64Forms);
  if (encoded.length > 0) patterns.push(new RegExp([...new Set(encoded)].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g'));
  // global patterns: `replace` starts each from 0 and leaves `lastIndex` at 0, so they are reusable
  return (text) => {
    let out = text;
    for (const pattern of patterns) out = out.replace(pattern, REDACTED);
    return out;
  };
}

/** Base64 fragments shorter than this are not redacted: they could stand in any encoded text. */
const MIN_BASE64_FRAGMENT = 8;

/**
 * `secret` as it stands inside any base64 (standard or URL-safe) text that holds it: the characters
 * that encode its bytes alone, at each of the three byte offsets it may start at (`Bearer <token>`
 * encoded puts the token at offset 1).
 */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    // characters whose six bits come from the secret's bytes only
    const fragment = text.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
    if (fragment.length < MIN_BASE64_FRAGMENT) continue;
    forms.push(fragment, fragment.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return forms;
}

/** HTML's names of characters a secret may hold (a reference by number covers every character). */
const HTML_NAMES: Readonly<Record<string, string>> = {
  '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos', '/': 'sol', '=': 'equals', '+': 'plus', '#': 'num', '%': 'percnt', ':': 'colon', ';': 'semi', '?': 'quest', '!': 'excl',
};

/**
 * A pattern of `text` as a URL, a form body or an HTML page may echo it, each character as
 * itself or percent-encoded (its UTF-8 bytes; also twice, `%252F`), a space as `+`, or as an
 * HTML reference by number (`&#39;`, `&#039;`, `&#x2F;`) or by name (`&apos;`, `&sol;`), mixed
 * as the echo's encoder chose (RFC 3986's reserved `!'()*` escaped or not, `'` written any way).
 */
function echoPattern(text: string): string {
  let pattern = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    const bytes = [...Buffer.from(char, 'utf8')].map((byte) => byte.toString(16).padStart(2, '0'));
    const alternatives = [escapeRegExp(char), bytes.map((b) => `%${b}`).join(''), bytes.map((b) => `%25${b}`).join(''), `&#0*${code};`, `&#x0*${code.toString(16)};`];
    if (char === ' ') alternatives.push('\\+');
    if (HTML_NAMES[char] !== undefined) alternatives.push(`&${HTML_NAMES[char]};`);
    pattern += `(?:${alternatives.join('|')})`;
  }
  return pattern;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A pattern of `secret` as it may stand inside a JSON string, whichever encoder wrote it: each
 * UTF-16 unit as itself, as its short escape (`\"`, `\\`, `\/`, `\n`…) or as `\uXXXX` in
 * either case. Encoders differ: PHP writes `/` as `\/` and non-ASCII as `\u00fc`, Python
 * keeps `/` and escapes non-ASCII, Go escapes `&`, `<` and `>`, some write `\u00FC`.
 */
function jsonStringPattern(secret: string): string {
  let pattern = '';
  for (let i = 0; i < secret.length; i++) {
    const unit = secret.charCodeAt(i);
    const hex = unit.toString(16).padStart(4, '0');
    const alternatives = [`\\\\u${[...hex].map((d) => (d >= 'a' ? `[${d}${d.toUpperCase()}]` : d)).join('')}`];
    const short = JSON.stringify(secret[i]).slice(1, -1);
    if (short.length === 2 && short[0] === '\\') {
      // `\n`, `\"`, `\\`: never the character itself, which JSON cannot hold unescaped (and a
      // bare backslash as well as `\\` would let a run of them match in exponentially many ways)
      alternatives.push(`\\\\${/[A-Za-z]/.test(short[1]!) ? short[1] : `\\${short[1]}`}`);
    } else {
      // the unit itself, as a regular-expression escape (safe for any character)
      alternatives.push(`\\u${hex}`);
    }
    if (secret[i] === '/') alternatives.push('\\\\/');
    pattern += `(?:${alternatives.join('|')})`;
  }
  return pattern;
}

/**
 * `word` where it is not part of a longer word: a secret of one to three characters (a
 * sandbox's `s3`) removed everywhere would garble every message and the `[redacted]` markers,
 * while an echo of it stands between spaces, quotes, `=` or `&`.
 */
function wordPattern(word: string): RegExp {
  return new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(word)}(?![\\p{L}\\p{N}_])`, 'gu');
}
