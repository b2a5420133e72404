// The public API is a promise: what lib/index.ts and lib/testing/index.ts export must be
// exactly what the README's "API reference" lists, so an export cannot change without the
// documentation changing with it.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { readmeSection } from '../support/readme.js';

const root = process.cwd();

/** Every name a barrel exports (values and types), read from its source. */
function exportedNames(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const names: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) names.push(element.name.text);
    } else if (ts.isExportDeclaration(statement)) {
      throw new Error(`${file}: 'export *' is not allowed in a deliberate public API`);
    } else if (ts.canHaveModifiers(statement) && ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) {
      throw new Error(`${file}: declare public symbols in their own files and re-export them by name`);
    }
  }
  return names.sort();
}

/** Names in the first column of the tables of the README's API reference, per entry point. */
function documentedNames(): Record<'main' | 'testing', string[]> {
  const section = readmeSection('## API reference');
  const out = { main: [] as string[], testing: [] as string[] };
  let entry: 'main' | 'testing' = 'main';
  for (const line of section.split('\n')) {
    if (line.startsWith('### ')) entry = line.includes('nestjs-payment-gateway/testing') ? 'testing' : 'main';
    const match = /^\| `([A-Za-z_$][\w$]*)` \|/.exec(line);
    if (match) out[entry].push(match[1]!);
  }
  return { main: out.main.sort(), testing: out.testing.sort() };
}

/** Exported names whose declaration has no `@publicApi` in its doc comment. */
function unmarked(barrel: string): string[] {
  const source = ts.createSourceFile(barrel, readFileSync(join(root, barrel), 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement) || !statement.moduleSpecifier || !statement.exportClause) continue;
    if (!ts.isNamedExports(statement.exportClause) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const file = join(dirname(barrel), statement.moduleSpecifier.text.replace(/\.js$/, '.ts'));
    const text = readFileSync(join(root, file), 'utf8');
    const module = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    for (const element of statement.exportClause.elements) {
      const name = (element.propertyName ?? element.name).text;
      const declarations = module.statements.filter((st) =>
        ts.isVariableStatement(st)
          ? st.declarationList.declarations.some((d) => ts.isIdentifier(d.name) && d.name.text === name)
          : (st as { name?: ts.Identifier }).name?.text === name,
      );
      const marked = declarations.some((st) => text.slice(st.getFullStart(), st.getStart()).includes('@publicApi'));
      if (!marked) out.push(`${name} (${file})`);
    }
  }
  return out;
}

describe('public API', () => {
  const documented = documentedNames();

  it("nestjs-payment-gateway exports exactly the README's API reference", () => {
    expect(exportedNames('lib/index.ts')).toEqual(documented.main);
  });

  it("nestjs-payment-gateway/testing exports exactly the README's API reference", () => {
    expect(exportedNames('lib/testing/index.ts')).toEqual(documented.testing);
  });

  it('marks every exported declaration @publicApi in its doc comment', () => {
    expect([...unmarked('lib/index.ts'), ...unmarked('lib/testing/index.ts')]).toEqual([]);
  });

  it('lists every name once', () => {
    for (const names of [documented.main, documented.testing]) {
      expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
    }
  });
});
