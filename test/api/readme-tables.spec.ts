// The README's tables are how users configure the module, read its answers and watch it:
// every environment variable the module reads must be in the configuration table with the
// option it fills and the default it has, every webhook error code and every metric in theirs,
// so none can change without the README changing with it.
import { PAYMENT_OPTION_DEFAULTS } from '../../lib/config/payment-options.defaults.js';
import { PAYMENT_ENV_VARIABLES } from '../../lib/config/payment-env.js';
import { PAYMENT_OPTION_KEYS } from '../../lib/config/payment-option-keys.validation.js';
import { PaymentMetricName } from '../../lib/telemetry/payment-telemetry.names.js';
import { PaymentWebhookErrorCode } from '../../lib/webhooks/payment-webhook.errors.js';
import { readmeSection } from '../support/readme.js';

interface ConfigurationRow {
  variable: string;
  options: string[];
  default: string;
}

/** The rows of the first table under "## Configuration": variable (may be empty), option(s), default. */
function configurationRows(): ConfigurationRow[] {
  const rows: ConfigurationRow[] = [];
  for (const line of readmeSection('## Configuration').split('\n')) {
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

  it('has a row for every option forRoot() takes (a new option without one fails here)', () => {
    const documented = new Set(rows.flatMap((r) => r.options));
    expect(PAYMENT_OPTION_KEYS.filter((option) => !documented.has(option))).toEqual([]);
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

describe('README webhook answers', () => {
  const codes: string[] = Object.values(PaymentWebhookErrorCode);

  it('the responses table shows real codes only, and every code the route can answer', () => {
    const table = [...readmeSection('### Responses').matchAll(/^\| (?:\d{3}|4xx) \| `(WEBHOOK_[A-Z_]+)` \|/gm)].map((m) => m[1]!);
    expect(table.filter((code) => !codes.includes(code))).toEqual([]);
    // every code, those of routes of your own built from the blocks included (their rows say so)
    expect([...new Set(table)].sort()).toEqual([...codes].sort());
    expect(readmeSection('### Building blocks for other routes')).toContain(PaymentWebhookErrorCode.IDEMPOTENCY_KEY_MISSING);
  });
});

describe('README metrics table', () => {
  it('lists exactly the instruments the module creates', () => {
    const table = [...readmeSection('### Metrics and traces (OpenTelemetry)').matchAll(/^\| `(payment_gateway\.[a-z_.]+)` \|/gm)].map((m) => m[1]!);
    expect(table.sort()).toEqual(Object.values(PaymentMetricName).sort());
  });
});
