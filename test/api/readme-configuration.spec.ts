// The README's configuration table is how users configure the module: every environment
// variable the module reads must be there with the option it fills and the default it has,
// so neither can change without the table changing with it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PAYMENT_OPTION_DEFAULTS } from '../../lib/config/payment-options.defaults.js';
import { PAYMENT_ENV_VARIABLES } from '../../lib/config/payment-env.js';

interface ConfigurationRow {
  variable: string;
  options: string[];
  default: string;
}

/** The rows of the first table under "## Configuration": variable (may be empty), option(s), default. */
function configurationRows(): ConfigurationRow[] {
  const readme = readFileSync(join(process.cwd(), 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Configuration');
  expect(start).toBeGreaterThan(-1);
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const rows: ConfigurationRow[] = [];
  for (const line of section.split('\n')) {
    const cells = /^\| (`PAYMENT_[A-Z_]+`)? ?\| (`[^|]+`) \| ([^|]+) \|/.exec(line);
    if (!cells) continue;
    rows.push({
      variable: cells[1]?.slice(1, -1) ?? '',
      options: [...cells[2]!.matchAll(/`(\w+)`/g)].map((m) => m[1]!),
      default: cells[3]!.trim(),
    });
  }
  return rows;
}

/** How the table writes a default: `300`, `sandbox`, `604800000` (7 days), … */
function documentedDefault(cell: string): string | undefined {
  return /^`([^`]+)`/.exec(cell)?.[1];
}

describe('README configuration table', () => {
  const rows = configurationRows();

  it('lists every PAYMENT_* variable the module reads, each with the option it fills, and no other', () => {
    const documented = Object.fromEntries(rows.filter((r) => r.variable !== '').map((r) => [r.variable, r.options]));
    const read = Object.fromEntries(Object.entries(PAYMENT_ENV_VARIABLES).map(([option, variable]) => [variable, [option]]));
    expect(documented).toEqual(read);
  });

  it("gives each option's default as the module has it", () => {
    const defaults: Record<string, unknown> = PAYMENT_OPTION_DEFAULTS;
    const checked: string[] = [];
    for (const row of rows) {
      // a row for two options (`retryBaseDelayMs` / `retryMaxDelayMs`) writes both defaults the same way
      const values = row.default.split(' / ').map(documentedDefault);
      row.options.forEach((option, i) => {
        if (!(option in defaults)) return; // no single value (required, none, a structure, another option)
        expect([option, values[i]]).toEqual([option, String(defaults[option])]);
        checked.push(option);
      });
    }
    // every default with a row of its own was compared
    expect(checked.sort()).toEqual(Object.keys(defaults).filter((option) => rows.some((r) => r.options.includes(option))).sort());
    expect(checked.length).toBeGreaterThan(20);
  });
});
