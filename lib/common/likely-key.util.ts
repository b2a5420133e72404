/** `; did you mean '<known>'?` for the known key nearest to `key` within two edits (case aside; the first of equals), else ''. */
export function likelyKey(key: string, known: readonly string[]): string {
  let near: string | undefined;
  let nearest = 3;
  for (const candidate of known) {
    const distance = editDistance(candidate.toLowerCase(), key.toLowerCase());
    if (distance < nearest) [near, nearest] = [candidate, distance];
  }
  return near === undefined ? '' : `; did you mean '${near}'?`;
}

/** Levenshtein distance, for the suggestion of a misspelt key (short strings only). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
