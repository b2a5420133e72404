import { secretRedactor } from '../../lib/client/payment-secret.redaction.js';

/** One text through a redactor of `secrets`. */
const redactSecrets = (text: string, secrets: Iterable<string | undefined>): string => secretRedactor(secrets)(text);

describe('redactSecrets', () => {
  it('removes a secret in every form a service may echo it in', () => {
    const secret = 'cs+/=s3cr"et v@lue';
    const echoed = [secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2), JSON.stringify(secret).slice(1, -1)];
    const out = redactSecrets(`bad: ${echoed.join(' | ')}`, [secret]);
    for (const form of echoed) expect(out).not.toContain(form);
    expect(out).toBe(`bad: ${Array(4).fill('[redacted]').join(' | ')}`);
  });

  it.each([
    ['HTML-escaped (an error page)', 'p<ss>&w0rd"q\'x', (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')],
    ['percent-encoded with lower-case hex', 'a/b+c=d?e-secret', (s: string) => encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    ["percent-encoded as RFC 3986 asks (also !'()*)", "s3cr3t!*'()-value", (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)],
    ['upper-cased', 'cs_live_8f3a9b2c7d1e6f50', (s: string) => s.toUpperCase()],
    ['JSON-escaped, then upper-cased', 'Sk_Live"/\\é+&=%x9Q', (s: string) => JSON.stringify(s).slice(1, -1).toUpperCase()],
    ['JSON-escaped, then HTML-escaped (a JSON body shown in an error page)', 'Sk_Live"/\\é+&=%x9Q', (s: string) => JSON.stringify(s).slice(1, -1).replace(/&/g, '&amp;').replace(/"/g, '&quot;')],
    ['in Unicode normalisation form NFD', 'Sk_Live_caf\u00e9_9Q', (s: string) => s.normalize('NFD')],
  ])('removes a secret echoed %s', (_label, secret, echo) => {
    expect(echo(secret)).not.toBe(secret);
    expect(redactSecrets(`invalid client_secret ${echo(secret)} given`, [secret])).toBe('invalid client_secret [redacted] given');
  });

  it.each([
    ["PHP's htmlspecialchars (ENT_QUOTES): ' as &#039;", "s3cr'et-Value", 's3cr&#039;et-Value'],
    ["HTML5's name: ' as &apos;", "s3cr'et-Value", 's3cr&apos;et-Value'],
    ['Go\'s html/template: " as &#34;', 'ab"cdEFGH12', 'ab&#34;cdEFGH12'],
    ['OWASP-style: / as &#x2F;', 'Zx9/Qw+ertY=', 'Zx9&#x2F;Qw+ertY='],
    ['HTML5 names for / and =', 'Zx9/Qw+ertY=', 'Zx9&sol;Qw&plus;ertY&equals;'],
    ['percent-encoded twice (a URL inside a URL)', 'Zx9/Qw+ertY=', 'Zx9%252FQw%252BertY%253D'],
    ['percent-encoded with RFC 3986 reserved characters left as they are, UTF-8 bytes in lower case', "k3y!é'(x)*", "k3y!%c3%a9'(x)*"],
    ['JSON-escaped, then escaped by number in a page', 'ab"cd/EFGH', 'ab\\&#34;cd/EFGH'],
  ])('removes a secret echoed as %s', (_label, secret, echo) => {
    expect(redactSecrets(`invalid client_secret ${echo} given`, [secret])).toBe('invalid client_secret [redacted] given');
  });

  it('removes a secret echoed as PHP json_encode writes it: "/" as "\\/", non-ASCII as \\uXXXX', () => {
    const secret = 'Zk9/aB+c/Qw€y12==';
    const php = JSON.stringify(secret).slice(1, -1).replace(/\//g, '\\/').replace('€', '\\u20ac');
    expect(php).toBe('Zk9\\/aB+c\\/Qw\\u20acy12==');
    expect(redactSecrets(`{"client_secret":"${php}"}`, [secret])).toBe('{"client_secret":"[redacted]"}');
  });

  it.each([
    ['Python (json.dumps): non-ASCII as \\u00fc, "/" kept', (c: string) => (c === 'ü' ? '\\u00fc' : undefined)],
    ['upper-case hex: \\u00FC, "/" as "\\/"', (c: string) => (c === 'ü' ? '\\u00FC' : c === '/' ? '\\/' : undefined)],
    ['Go (encoding/json): "&", "<" and ">" as \\u0026…', (c: string) => ({ '&': '\\u0026', '<': '\\u003c', '>': '\\u003e' })[c]],
    ['every character as \\uXXXX', (c: string) => [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')],
  ])('removes a secret echoed by another JSON encoder: %s', (_label, escape) => {
    const secret = 'S3cr3t/+=&<>"\\ü-Secret😀';
    // character by character: the encoder's escape, else JSON.stringify's form ("\\"", "\\\\", the rest as is)
    const encoded = Array.from(secret)
      .map((c) => escape(c) ?? JSON.stringify(c).slice(1, -1))
      .join('');
    expect(encoded).not.toBe(JSON.stringify(secret).slice(1, -1));
    expect(redactSecrets(`bad body {"client_secret":"${encoded}"}`, [secret])).toBe('bad body {"client_secret":"[redacted]"}');
  });

  it('removes a secret with control characters echoed in JSON (\\t, \\n), and a short one as PHP writes it', () => {
    const secret = 'abcd\tefgh\nijkl';
    expect(redactSecrets(`{"client_secret":${JSON.stringify(secret)}}`, [secret])).toBe('{"client_secret":"[redacted]"}');
    expect(redactSecrets(`{"client_secret":${JSON.stringify(secret).replace('\\t', '\\u0009')}}`, [secret])).toBe('{"client_secret":"[redacted]"}');
    expect(redactSecrets('{"client_secret":"a\\/b"}', ['a/b'])).toBe('{"client_secret":"[redacted]"}');
  });

  it('stays linear on a secret of many backslashes (each has one JSON form, so no run matches in many ways)', () => {
    const secret = `${'\\'.repeat(40)}x`;
    const text = `bad ${JSON.stringify(secret).slice(1, -1).slice(0, -1)}y ${'\\'.repeat(2_000)}`;
    const startedAt = performance.now();
    expect(redactSecrets(text, [secret])).toBe(text); // almost the secret, and a long run of backslashes: no match
    expect(performance.now() - startedAt).toBeLessThan(1_000); // exponential backtracking took minutes here
    expect(redactSecrets(`x ${JSON.stringify(secret)} ${secret}`, [secret])).toBe('x "[redacted]" [redacted]');
  });

  it('removes a secret with an astral character (a surrogate pair) written as two \\u escapes', () => {
    const secret = 'emoji-😀-secret';
    const escaped = 'emoji-\\ud83d\\uDE00-secret';
    expect(redactSecrets(`"${escaped}"`, [secret])).toBe('"[redacted]"');
  });

  it('removes a secret of one to three characters where it stands alone, and leaves words that contain it', () => {
    expect(redactSecrets('bad secret k9Z', ['k9Z'])).toBe('bad secret [redacted]');
    expect(redactSecrets('client_id=shop&client_secret=s3&x=1', ['s3'])).toBe('client_id=shop&client_secret=[redacted]&x=1');
    expect(redactSecrets('{"client_secret":"s"}', ['s'])).toBe('{"client_secret":"[redacted]"}');
    // inside longer words it is not the secret; the markers of other secrets stay readable
    expect(redactSecrets('s3cond attempts, k9Zeta', ['s3', 'k9Z'])).toBe('s3cond attempts, k9Zeta');
    expect(redactSecrets('long-secret-value and e', ['long-secret-value', 'e'])).toBe('[redacted] and [redacted]');
  });

  it('removes the longest secret first, so one inside another leaves no piece of the longer one', () => {
    const clientSecret = 'cs-inner-secret';
    const token = `tok.${clientSecret}.tail-part`;
    // given in either order: the token was not cut around the client secret first
    expect(redactSecrets(`Bearer ${token}; ${clientSecret}`, [clientSecret, token])).toBe('Bearer [redacted]; [redacted]');
    expect(redactSecrets(`Bearer ${token}`, [token, clientSecret])).toBe('Bearer [redacted]');
  });

  it.each([0, 1, 2, 5])('removes a secret base64-encoded within a longer text (standard and URL-safe), at byte offset %i', (offset) => {
    const token = 'eyJhbGciOi.tok3n~value?>>';
    const encoded = Buffer.from(`${'x'.repeat(offset)}${token}+tail`).toString('base64');
    for (const form of [encoded, Buffer.from(`${'x'.repeat(offset)}${token}+tail`).toString('base64url')]) {
      const out = redactSecrets(`auth header was ${form}`, [token]);
      expect(out).toContain('[redacted]');
      // what is left of the encoding decodes to no more than two of the token's bytes on either side
      const decoded = out.split('[redacted]').map((part) => Buffer.from(part.replace('auth header was ', ''), 'base64').toString('latin1')).join('');
      expect(decoded).not.toContain(token.slice(0, 3));
      expect(decoded).not.toContain(token.slice(-3));
    }
    // `Bearer <token>` as a whole
    expect(redactSecrets(Buffer.from(`Bearer ${token}`).toString('base64'), [token])).not.toContain(Buffer.from(token).toString('base64').slice(2, 12));
  });

  it('leaves base64 text alone when a secret is too short for its encoding to be told from any other', () => {
    expect(redactSecrets(`data ${Buffer.from('xxabcdexx').toString('base64')}`, ['abcde'])).toBe(`data ${Buffer.from('xxabcdexx').toString('base64')}`);
  });

  it('takes secrets with regular-expression characters literally', () => {
    expect(redactSecrets('a.b and a+b', ['a+b'])).toBe('a.b and [redacted]');
    expect(redactSecrets('x (.*) y', ['.*'])).toBe('x ([redacted]) y');
  });

  it('skips absent and empty secrets', () => {
    expect(redactSecrets('nothing to hide', [undefined, ''])).toBe('nothing to hide');
  });
});

describe('secretRedactor', () => {
  it('builds the patterns once and scrubs every text given to it as redactSecrets would, call after call', () => {
    const secrets = ['cs_live_8f3a9b2c7d1e6f50', 's3', undefined];
    const redact = secretRedactor(secrets);
    const texts = ['token cs_live_8f3a9b2c7d1e6f50 refused', 'CS_LIVE_8F3A9B2C7D1E6F50 twice cs_live_8f3a9b2c7d1e6f50', 'key=s3&x=1', 'nothing here'];
    // twice over: a global pattern that kept its lastIndex would skip an echo the second time
    for (const text of [...texts, ...texts]) expect(redact(text)).toBe(redactSecrets(text, secrets));
    expect(redact(texts[1]!)).toBe('[redacted] twice [redacted]');
    expect(redact(texts[2]!)).toBe('key=[redacted]&x=1');
  });
});
