// The layout rules of CONTRIBUTING.md's "Where things are", checked on the source: the
// runtime imports between lib/ files (type-only imports are erased and do not count).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import ts from 'typescript';

const lib = join(process.cwd(), 'lib');

function libFiles(dir: string = lib): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? libFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** The lib/ files `file` imports (or re-exports from) at run time, as paths relative to lib/. */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  for (const statement of source.statements) {
    let specifier: ts.Expression | undefined;
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.isTypeOnly) continue;
      const named = clause?.namedBindings;
      const onlyTypes = clause && !clause.name && named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      if (onlyTypes) continue;
      specifier = statement.moduleSpecifier;
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier && !statement.isTypeOnly) {
      specifier = statement.moduleSpecifier;
    }
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
    const target = join(dirname(file), specifier.text.replace(/\.js$/, '.ts'));
    out.push(relative(lib, target).split('\\').join(posix.sep));
  }
  return out;
}

const graph = new Map(libFiles().map((file) => [relative(lib, file).split('\\').join(posix.sep), runtimeImports(file)]));

describe('lib/ import graph', () => {
  it('has no runtime import cycle between files', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...path.slice(path.indexOf(file)), file].join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('keeps common/ free of the package, and config/ free of every capability folder', () => {
    const outside = (folder: string, allowed: (target: string) => boolean) =>
      [...graph].filter(([file]) => file.startsWith(`${folder}/`)).flatMap(([file, targets]) => targets.filter((t) => !allowed(t)).map((t) => `${file} → ${t}`));
    expect(outside('common', (t) => t.startsWith('common/'))).toEqual([]);
    expect(outside('config', (t) => t.startsWith('config/') || t.startsWith('common/') || !t.includes('/'))).toEqual([]);
  });

  it('keeps every file at 350 lines or fewer (CONTRIBUTING: smaller rooms)', () => {
    const lines = (file: string) => readFileSync(join(lib, file), 'utf8').split('\n').length - 1;
    expect([...graph.keys()].filter((file) => lines(file) > 350).map((file) => `${file}: ${lines(file)} lines`)).toEqual([]);
  });

  it('reads every import it checks (the graph is not empty)', () => {
    expect(graph.size).toBeGreaterThan(80);
    expect(graph.get('webhooks/payment-webhook.processor.ts')).toContain('webhooks/payment-webhook.verifier.ts');
  });
});
