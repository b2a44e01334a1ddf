// No import circle in src/: a module never depends, through any chain of imports, on itself. Every
// import counts, a type-only one (`import type`, `export type … from`) and a lazy one (`import()`)
// as much as any other: a circle broken at run time by a lazy import, or only in the types, is
// still two ideas that cannot be read, tested or moved apart. The import statements are read with
// the TypeScript compiler's own scanner (`preProcessFile`); the detector itself is checked on
// snippets of each form.
//
// Folders by idea: a module outside a folder imports it only through the folder's index.ts (which
// lists what the rest of foreman uses from it), src/core's top level stays small, no source file
// is over 400 lines and no function over 120, and a task is read by its index through taskAt.

import { readFileSync, readdirSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each module's relative imports, of every form, as the paths they resolve to (`a/b.ts`). */
function importGraph(files: ReadonlyArray<{ path: string; text: string }>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of files) {
    const imported = ts
      .preProcessFile(file.text, true, true)
      .importedFiles.map((reference) => reference.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => posix.normalize(posix.join(posix.dirname(file.path), name)));
    graph.set(file.path, new Set(imported));
  }
  return graph;
}

/**
 * The import circles: the strongly connected components of more than one module (or of one that
 * imports itself), by Tarjan's algorithm, each as its modules, sorted.
 */
function circles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (module: string) => {
    order.set(module, order.size);
    lowest.set(module, order.get(module)!);
    stack.push(module);
    onStack.add(module);
    for (const next of graph.get(module) ?? []) {
      if (!graph.has(next)) continue;
      if (!order.has(next)) {
        visit(next);
        lowest.set(module, Math.min(lowest.get(module)!, lowest.get(next)!));
      } else if (onStack.has(next)) lowest.set(module, Math.min(lowest.get(module)!, order.get(next)!));
    }
    if (lowest.get(module) !== order.get(module)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== module);
    if (component.length > 1 || graph.get(module)?.has(module)) found.push(component.sort());
  };
  for (const module of [...graph.keys()].sort()) if (!order.has(module)) visit(module);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** A circle's imports between its own modules, to name in a failure: `a.ts → b.ts`. */
const edgesWithin = (graph: ReadonlyMap<string, ReadonlySet<string>>, circle: readonly string[]) =>
  circle.flatMap((from) => [...(graph.get(from) ?? [])].filter((to) => circle.includes(to)).map((to) => `${from} → ${to}`));

describe('no import circle in src/', () => {
  const files = sources(join(ROOT, 'src')).map((path) => ({ path: relative(ROOT, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));
  const graph = importGraph(files);

  it('reads the whole source and resolves every relative import to a module of it (the test would pass vacuously otherwise)', () => {
    expect(files.length).toBeGreaterThan(100);
    const imports = [...graph.values()].flatMap((targets) => [...targets]);
    expect(imports.length).toBeGreaterThan(500);
    expect(imports.filter((target) => !graph.has(target) && !target.endsWith('.json'))).toEqual([]);
  });

  it('no module imports itself through a chain of imports, type-only and lazy ones included', () => {
    expect(circles(graph).map((circle) => edgesWithin(graph, circle))).toEqual([]);
  });
});

/**
 * The folder an import goes into that the importing module is not in, as the folder its path names
 * first that does not hold the importer: `src/run/x.ts` importing `src/core/plan/graph.ts` enters
 * `src/core`; `src/core/engine/x.ts` importing it enters `src/core/plan`. Null when the imported
 * module's folder holds the importer (a module may use what its own folder and the folders around
 * it hold directly).
 */
function folderEntered(importer: string, imported: string): string | null {
  const folders = posix.dirname(imported).split('/');
  for (let depth = 2; depth <= folders.length; depth++) {
    const folder = folders.slice(0, depth).join('/');
    if (!importer.startsWith(`${folder}/`)) return folder;
  }
  return null;
}

/** Each import that reaches past a folder's `index.ts`, or into the index of a folder it is in. */
function entranceBreaches(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const breaches: string[] = [];
  for (const [importer, imported] of graph) {
    for (const target of imported) {
      const folder = folderEntered(importer, target);
      if (folder !== null && target !== `${folder}/index.ts`) breaches.push(`${importer} → ${target} (enter ${folder}/index.ts)`);
      if (target.endsWith('/index.ts') && importer.startsWith(`${posix.dirname(target)}/`) && importer !== target)
        breaches.push(`${importer} → ${target} (its own folder's index: import the module itself)`);
    }
  }
  return breaches.sort();
}

/** The folders and the files at a folder's top level. */
function topLevel(dir: string): { folders: string[]; files: string[] } {
  const entries = readdirSync(join(ROOT, dir), { withFileTypes: true });
  return {
    folders: entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name),
    files: entries.filter((entry) => entry.isFile()).map((entry) => entry.name),
  };
}

describe('folders by idea, each entered through its index.ts', () => {
  const files = sources(join(ROOT, 'src')).map((path) => ({ path: relative(ROOT, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));
  const graph = importGraph(files);

  it("a module outside a folder imports it only through the folder's index.ts, and no module imports its own folder's index", () => {
    expect(entranceBreaches(graph)).toEqual([]);
  });

  it('every folder of src/ that another module enters has an index.ts', () => {
    const entered = new Set(
      [...graph].flatMap(([importer, imported]) => [...imported].map((target) => folderEntered(importer, target)).filter((folder) => folder !== null)),
    );
    expect([...entered].filter((folder) => !graph.has(`${folder}/index.ts`)).sort()).toEqual([]);
    expect(entered.size).toBeGreaterThan(15);
  });

  it('src/core holds at most 12 folders and files at its top level; core/ and adapters/ each at most 6 loose files', () => {
    const core = topLevel('src/core');
    expect(core.folders.length + core.files.length, [...core.folders, ...core.files].join(' ')).toBeLessThanOrEqual(12);
    expect(core.files.length, core.files.join(' ')).toBeLessThanOrEqual(6);
    const adapters = topLevel('src/adapters');
    expect(adapters.files.length, adapters.files.join(' ')).toBeLessThanOrEqual(6);
  });

  it("the rule is checked on snippets: through the index passes, past it or into one's own folder's index fails", () => {
    const check = (files: Record<string, string>) => entranceBreaches(importGraph(Object.entries(files).map(([path, text]) => ({ path, text }))));
    expect(
      check({
        'src/run/a.ts': `import { b } from '../core/index.ts';\nimport { c } from './c.ts';`,
        'src/core/plan/d.ts': `import { e } from '../result.ts';\nimport { f } from '../engine/index.ts';`,
      }),
    ).toEqual([]);
    expect(check({ 'src/run/a.ts': `import { b } from '../core/plan/graph.ts';` })).toEqual([
      'src/run/a.ts → src/core/plan/graph.ts (enter src/core/index.ts)',
    ]);
    expect(check({ 'src/core/engine/a.ts': `import { b } from '../plan/graph.ts';` })).toEqual([
      'src/core/engine/a.ts → src/core/plan/graph.ts (enter src/core/plan/index.ts)',
    ]);
    expect(check({ 'src/core/plan/a.ts': `import { b } from './index.ts';` })).toEqual([
      "src/core/plan/a.ts → src/core/plan/index.ts (its own folder's index: import the module itself)",
    ]);
  });
});

/** Each function's name (or `(anonymous)`), its file and line, and its length in lines. */
function functionLengths(file: { path: string; text: string }): Array<{ where: string; lines: number }> {
  const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
  const found: Array<{ where: string; lines: number }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const name =
        'name' in node && node.name && ts.isIdentifier(node.name)
          ? node.name.text
          : ts.isVariableDeclaration(node.parent)
            ? node.parent.name.getText(source)
            : '(anonymous)';
      found.push({ where: `${file.path}:${first + 1} ${name}`, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('files and functions of one idea', () => {
  const files = sources(join(ROOT, 'src')).map((path) => ({ path: relative(ROOT, path).split('\\').join('/'), text: readFileSync(path, 'utf8') }));
  const written = files.filter((file) => !file.path.endsWith('.generated.ts'));

  it('no source file is over 400 lines but the generated validators', () => {
    const long = written
      .map((file) => ({ path: file.path, lines: file.text.split('\n').length - (file.text.endsWith('\n') ? 1 : 0) }))
      .filter((file) => file.lines > 400);
    expect(long).toEqual([]);
  });

  it('no function is over 120 lines', () => {
    const all = written.flatMap(functionLengths);
    expect(all.length).toBeGreaterThan(1000);
    expect(all.filter((found) => found.lines > 120)).toEqual([]);
  });

  it('a task is read by its index through taskAt, never as `tasks[i]!`', () => {
    const reads = written.flatMap((file) => [...file.text.matchAll(/tasks\[[^\]]*\]!/g)].map((match) => `${file.path}: ${match[0]}`));
    expect(reads).toEqual([]);
  });

  it('measures a function from its first line to its last', () => {
    const text = 'function a() {\n  return 1;\n}\nconst b = () => {\n\n};\n';
    expect(functionLengths({ path: 'x.ts', text })).toEqual([
      { where: 'x.ts:1 a', lines: 3 },
      { where: 'x.ts:4 b', lines: 3 },
    ]);
  });
});

describe('the detector of import circles', () => {
  const detect = (files: Record<string, string>) => circles(importGraph(Object.entries(files).map(([path, text]) => ({ path, text }))));

  it('finds a circle made by each form of import', () => {
    const forms: Record<string, string> = {
      'a value import': `import { b } from './b.ts';`,
      'a type-only import': `import type { B } from './b.ts';`,
      'a type-only specifier': `import { type B } from './b.ts';`,
      'a re-export': `export { b } from './b.ts';`,
      'a type-only re-export': `export type { B } from './b.ts';`,
      'a lazy import': `const load = () => import('./b.ts');`,
      'an import for its effects': `import './b.ts';`,
      'an import type in a type': `let b: import('./b.ts').B;`,
    };
    for (const [form, line] of Object.entries(forms))
      expect(detect({ 'src/x/a.ts': line, 'src/x/b.ts': `import type { A } from './a.ts';` }), form).toEqual([['src/x/a.ts', 'src/x/b.ts']]);
  });

  it('finds a circle through folders and several modules, and one module importing itself', () => {
    const files = {
      'src/core/a.ts': `import { b } from '../adapters/b.ts';`,
      'src/adapters/b.ts': `import { c } from './deeper/c.ts';`,
      'src/adapters/deeper/c.ts': `import type { A } from '../../core/a.ts';`,
      'src/run/d.ts': `import { d } from './d.ts';`,
    };
    expect(detect(files)).toEqual([['src/adapters/b.ts', 'src/adapters/deeper/c.ts', 'src/core/a.ts'], ['src/run/d.ts']]);
  });

  it('finds none where imports only run one way, and counts no package', () => {
    const files = {
      'src/core/a.ts': `import { readFileSync } from 'node:fs';\nimport ts from 'typescript';`,
      'src/adapters/b.ts': `import { a } from '../core/a.ts';`,
      'src/run/c.ts': `import { a } from '../core/a.ts';\nimport type { B } from '../adapters/b.ts';`,
    };
    expect(detect(files)).toEqual([]);
  });
});
