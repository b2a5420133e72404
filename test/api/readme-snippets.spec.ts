// The README's TypeScript examples are what users paste: each one is type-checked against the
// package's public entry points (as `nestjs-payment-gateway` and `nestjs-payment-gateway/testing`)
// and the host packages it uses, so a renamed export, option or method cannot leave an example
// that no longer compiles.
//
// Examples are often fragments. A name an example uses without importing it is imported for it
// when a package below exports it (the first that does); names of the reader's own app
// (`AppModule`, `trxId`) must be listed in APP_NAMES. An HTML comment on the line before the
// fence says how to read a fragment (the default is a module):
//   <!-- snippet: class-body payments=PaymentHealthIndicator -->  methods of a class whose fields are given
//   <!-- snippet: method-body payments=PaymentGatewayService -->  statements inside a method of such a class
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = process.cwd();
const README_LINES = readFileSync(join(root, 'README.md'), 'utf8').split('\n');

/** Where an example's unimported names are looked up, in this order. */
const PACKAGES = [
  'nestjs-payment-gateway',
  'nestjs-payment-gateway/testing',
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/config',
  '@nestjs/event-emitter',
  '@nestjs/testing',
  '@nestjs/platform-express',
  '@nestjs/platform-fastify',
  '@nestjs/terminus',
  '@nestjs/throttler',
];

/** Packages an example imports that this repository does not install: their names are unchecked. */
const NOT_INSTALLED = new Set(['@opentelemetry/exporter-prometheus']);

/** Names of the reader's own application the examples use, declared for them. */
const APP_NAMES: Record<string, string> = {
  AppModule: 'declare class AppModule {}',
  CheckoutService: 'declare class CheckoutService {}',
  AdminGuard: 'declare class AdminGuard {}',
  OrdersService: 'declare class OrdersService { markPaid(orderId: string, trxId?: string, amount?: string): Promise<void>; }',
  AlertsService: 'declare class AlertsService { page(text: string): void; }',
  OrdersDbWebhookStore: "declare class OrdersDbWebhookStore {}",
  Order: 'type Order = { id: string; region: string; total: string; currency: string };',
  Public: "declare const Public: () => import('@nestjs/common').CustomDecorator<string>;",
  moduleRef: "declare const moduleRef: import('@nestjs/core').ModuleRef;",
  fake: "declare const fake: Partial<import('nestjs-payment-gateway').PaymentGatewayService>;",
  trxId: 'declare const trxId: string;',
  rawBodyBuffer: 'declare const rawBodyBuffer: Buffer;',
  req: "declare const req: import('express').Request;",
  res: "declare const res: import('express').Response;",
  euAppUrl: 'declare const euAppUrl: string;',
};

interface Snippet {
  /** Line of the README the code starts on (1-based). */
  line: number;
  code: string;
  kind: 'module' | 'class-body' | 'method-body';
  /** `this.<name>` fields of a fragment's class, with their types. */
  fields: Array<[string, string]>;
}

function readmeSnippets(): Snippet[] {
  const snippets: Snippet[] = [];
  for (let i = 0; i < README_LINES.length; i++) {
    if (README_LINES[i] !== '```ts') continue;
    const marker = /^<!-- snippet: (class-body|method-body)((?: \w+=[\w<>]+)*) -->$/.exec(README_LINES[i - 1] ?? '');
    const start = i + 1;
    while (README_LINES[++i] !== '```') if (i >= README_LINES.length) throw new Error(`README.md:${start}: unterminated code block`);
    snippets.push({
      line: start + 1, // `start` is the first code line's index
      code: README_LINES.slice(start, i).join('\n'),
      kind: (marker?.[1] as Snippet['kind'] | undefined) ?? 'module',
      fields: (marker?.[2] ?? '').trim().split(' ').filter(Boolean).map((field) => field.split('=') as [string, string]),
    });
  }
  return snippets;
}

/** Lines `sourceOf` puts before an example's first line: the imports, and a fragment's class head. */
function headerLines(snippet: Snippet): number {
  return 1 + (snippet.kind === 'module' ? 0 : 1 + snippet.fields.length + (snippet.kind === 'method-body' ? 1 : 0));
}

/** The file an example is checked as: its imports first (one line), a fragment wrapped in its class. */
function sourceOf(snippet: Snippet, imports: readonly string[]): string {
  const lines = snippet.code.split('\n');
  if (snippet.kind === 'module') return [imports.join(' '), ...lines, 'export {};'].join('\n');
  // a fragment's own imports go to the top; blank lines keep the rest on their lines
  const own = lines.filter((l) => l.startsWith('import '));
  const body = lines.map((l) => (l.startsWith('import ') ? '' : l));
  const fields = snippet.fields.map(([name, type]) => `  declare readonly ${name}: ${type};`);
  const wrapped =
    snippet.kind === 'class-body'
      ? ['class ReadmeExample {', ...fields, ...body, '}']
      : ['class ReadmeExample {', ...fields, '  async example(): Promise<void> {', ...body, '  }', '}'];
  return [[...imports, ...own].join(' '), ...wrapped, 'export {};'].join('\n');
}

const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.Node16,
  moduleResolution: ts.ModuleResolutionKind.Node16,
  lib: ['lib.es2022.d.ts'],
  types: ['node', 'jest'],
  strict: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  skipLibCheck: true,
  noEmit: true,
  baseUrl: root,
  paths: { 'nestjs-payment-gateway': ['./lib/index.ts'], 'nestjs-payment-gateway/testing': ['./lib/testing/index.ts'] },
};

/** One program over virtual `.mts` files (ES modules: top-level await is allowed, as in the examples). */
function compile(files: Map<string, string>): ts.Program {
  const host = ts.createCompilerHost(compilerOptions);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => files.has(file) || fileExists.call(host, file);
  host.readFile = (file) => files.get(file) ?? readFile.call(host, file);
  host.getSourceFile = (file, language, ...rest) =>
    files.has(file) ? ts.createSourceFile(file, files.get(file)!, language, true) : getSourceFile.call(host, file, language, ...rest);
  return ts.createProgram([...files.keys()], compilerOptions, host);
}

/** A file importing every package of PACKAGES, compiled with the examples' first pass. */
const EXPORTS_FILE = join(root, 'readme-snippets', 'exports.mts');
const EXPORTS_SOURCE = PACKAGES.map((name, i) => `import * as p${i} from '${name}';`).join('\n') + '\nexport {};';

/** Each exported name of PACKAGES, with the first package that exports it. */
function packageExports(program: ts.Program): Map<string, string> {
  const checker = program.getTypeChecker();
  const owner = new Map<string, string>();
  for (const statement of program.getSourceFile(EXPORTS_FILE)!.statements) {
    if (!ts.isImportDeclaration(statement)) continue;
    const name = (statement.moduleSpecifier as ts.StringLiteral).text;
    const symbol = checker.getSymbolAtLocation(statement.moduleSpecifier);
    if (symbol === undefined) throw new Error(`package ${name} is not installed`);
    for (const exported of checker.getExportsOfModule(symbol)) if (!owner.has(exported.name)) owner.set(exported.name, name);
  }
  return owner;
}

const UNKNOWN_NAME = new Set([2304, 2552, 2582]); // Cannot find name (… Did you mean …?)

describe('README TypeScript examples', () => {
  const snippets = readmeSnippets();

  it('are all found (the README has examples; markers name a known kind)', () => {
    expect(snippets.length).toBeGreaterThan(20);
    const stray = README_LINES.flatMap((line, i) => (line.startsWith('<!-- snippet') && README_LINES[i + 1] !== '```ts' ? [`README.md:${i + 1}`] : []));
    expect(stray).toEqual([]);
  });

  it('type-check against the public entry points and the host packages they use', () => {
    const fileOf = (snippet: Snippet): string => join(root, 'readme-snippets', `line-${snippet.line}.mts`);

    // first pass: which names each example leaves unimported, and which package exports each
    const first = compile(new Map([[EXPORTS_FILE, EXPORTS_SOURCE], ...snippets.map((s): [string, string] => [fileOf(s), sourceOf(s, [])])]));
    const owner = packageExports(first);
    const problems: string[] = [];
    const files = new Map<string, string>();
    for (const snippet of snippets) {
      const byPackage = new Map<string, Set<string>>();
      const app = new Set<string>();
      for (const d of first.getSemanticDiagnostics(first.getSourceFile(fileOf(snippet)))) {
        if (!UNKNOWN_NAME.has(d.code)) continue;
        const name = d.file!.text.slice(d.start!, d.start! + d.length!);
        const pkg = owner.get(name);
        if (pkg !== undefined) byPackage.set(pkg, (byPackage.get(pkg) ?? new Set()).add(name));
        else if (name in APP_NAMES) app.add(name);
        else problems.push(`README.md:${snippet.line}: '${name}' is neither imported, exported by ${PACKAGES.join(', ')}, nor one of the app's names`);
      }
      const imports = [...byPackage].map(([pkg, names]) => `import { ${[...names].join(', ')} } from '${pkg}';`);
      imports.push(...[...app].map((name) => APP_NAMES[name]!));
      files.set(fileOf(snippet), sourceOf(snippet, imports));
    }

    // second pass: every error that is left is the example's
    const second = compile(files);
    for (const snippet of snippets) {
      const source = second.getSourceFile(fileOf(snippet))!;
      for (const d of [...second.getSyntacticDiagnostics(source), ...second.getSemanticDiagnostics(source)]) {
        const text = ts.flattenDiagnosticMessageText(d.messageText, ' ');
        const missing = /^Cannot find module '([^']+)'/.exec(text)?.[1];
        if (missing !== undefined && (missing.startsWith('.') || NOT_INSTALLED.has(missing))) continue;
        const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
        problems.push(`README.md:${snippet.line + Math.max(0, line - headerLines(snippet))}: TS${d.code} ${text}`);
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);
});
