/**
 * No lone surrogates (`String.prototype.isWellFormed`, Node 20+, not yet in the ES2022 lib
 * typings): such a string cannot be URL-encoded, and `"a\ud800"` and `"a\udbff"` encode to
 * the same UTF-8 bytes.
 */
export function isWellFormedUnicode(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}
