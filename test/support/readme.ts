// The README as tests read it: its tables are checked against the code.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const README = readFileSync(join(process.cwd(), 'README.md'), 'utf8');

/**
 * The text of the section under `heading` (a whole line, e.g. `## Configuration`), up to the
 * next heading of its level or a higher one (below the title).
 */
export function readmeSection(heading: string): string {
  const start = README.indexOf(`\n${heading}\n`);
  if (start === -1) throw new Error(`README.md has no heading "${heading}"`);
  const level = heading.indexOf(' ');
  // from `##`: a `# ` line inside a code block is a shell comment, and the README has one `#` heading, its title
  const next = new RegExp(`^#{2,${level}} `, 'm');
  const rest = README.slice(start + heading.length + 2);
  const end = rest.search(next);
  return README.slice(start, end === -1 ? undefined : start + heading.length + 2 + end);
}
