const REDACTED = '[redacted]';
/** Secrets shorter than this are redacted only where they stand alone (see `redactWord`). */
const SHORT_SECRET_LENGTH = 4;

/**
 * `text` without any of `secrets`, each also as sent in a form body or a URL and inside a
 * JSON string (a service echoing the request shows one of those forms), percent-encoded as
 * RFC 3986 asks and HTML-escaped, in any letter case and either Unicode normal form (NFC, NFD).
 * A cut-short echo stays readable.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  // longest first: a secret inside another (a client secret within a token) must not cut the
  // longer one into pieces that then match nothing and stay readable around the marker
  // each in both Unicode normal forms too: an echo may have been normalised on its way back
  const given = [...secrets].filter((secret): secret is string => !!secret);
  const ordered = [...new Set(given.flatMap((secret) => [secret, secret.normalize('NFC'), secret.normalize('NFD')]))].sort((a, b) => b.length - a.length);
  for (const secret of ordered) {
    const plainForms = [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)];
    // as JSON.stringify writes it inside a string
    const json = JSON.stringify(secret).slice(1, -1);
    if (secret.length < SHORT_SECRET_LENGTH) {
      // also as PHP's json_encode writes it: "/" as "\/", non-ASCII as \uXXXX
      const php = json.replace(/\//g, '\\/').replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
      for (const form of new Set([...plainForms, json, php])) out = redactWord(out, form);
      continue;
    }
    // every way a JSON encoder may write it inside a string; first, since an escaped secret can
    // hold the plain one (`\\\\x` holds `\\x`), which would leave its start readable
    out = out.replace(new RegExp(jsonStringPattern(secret), 'gi'), REDACTED);
    // and as other echoes show it: percent-encoded as RFC 3986 asks, HTML-escaped (an error page);
    // whatever the case (lower-case hex, an upper-cased message): longest form first
    // (and a JSON echo inside an HTML page)
    const forms = [...new Set([...plainForms, strictPercentEncoded(secret), ...htmlEscaped(secret), ...htmlEscaped(json)])].sort((a, b) => b.length - a.length);
    out = out.replace(new RegExp(forms.map(escapeRegExp).join('|'), 'gi'), REDACTED);
  }
  return out;
}

/** `encodeURIComponent` plus the characters RFC 3986 reserves that it leaves as they are. */
function strictPercentEncoded(secret: string): string {
  return encodeURIComponent(secret).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `secret` as HTML escapes it (`'` written either way). */
function htmlEscaped(secret: string): string[] {
  const escaped = secret.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  return [escaped.replace(/'/g, '&#39;'), escaped.replace(/'/g, '&#x27;')];
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
 * Removes `word` where it is not part of a longer word: a secret of one to three characters
 * (a sandbox's `s3`) removed everywhere would garble every message and the `[redacted]`
 * markers, while an echo of it stands between spaces, quotes, `=` or `&`.
 */
function redactWord(text: string, word: string): string {
  return text.replace(new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(word)}(?![\\p{L}\\p{N}_])`, 'gu'), REDACTED);
}
