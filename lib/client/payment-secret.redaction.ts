const REDACTED = '[redacted]';
/** Secrets shorter than this are redacted only where they stand alone (see `redactWord`). */
const SHORT_SECRET_LENGTH = 4;

/**
 * `text` without any of `secrets`, each also as sent in a form body or a URL and inside a
 * JSON string: a service echoing the request shows one of those forms.
 */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  // longest first: a secret inside another (a client secret within a token) must not cut the
  // longer one into pieces that then match nothing and stay readable around the marker
  const ordered = [...secrets].filter((secret): secret is string => !!secret).sort((a, b) => b.length - a.length);
  for (const secret of ordered) {
    const json = JSON.stringify(secret).slice(1, -1);
    // also as PHP's json_encode writes it (a common service stack): "/" as "\/", non-ASCII as \uXXXX
    const php = json.replace(/\//g, '\\/').replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const forms = new Set([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2), json, php]);
    for (const form of forms) out = secret.length < SHORT_SECRET_LENGTH ? redactWord(out, form) : out.split(form).join(REDACTED);
  }
  return out;
}

/**
 * Removes `word` where it is not part of a longer word: a secret of one to three characters
 * (a sandbox's `s3`) removed everywhere would garble every message and the `[redacted]`
 * markers, while an echo of it stands between spaces, quotes, `=` or `&`.
 */
function redactWord(text: string, word: string): string {
  const escaped = word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`(?<![\\p{L}\\p{N}_])${escaped}(?![\\p{L}\\p{N}_])`, 'gu'), REDACTED);
}
