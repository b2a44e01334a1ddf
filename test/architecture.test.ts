// No import circle in src/: a module never depends, through any chain of imports, on itself. Every
// import counts, a type-only one (`import type`, `export type … from`) and a lazy one (`import()`)
// as much as any other: a circle broken at run time by a lazy import, or only in the types, is
// still two ideas that cannot be read, tested or moved apart. The import statements are read with
// the TypeScript compiler's own scanner (`preProcessFile`); the detector itself is checked on
// snippets of each form.

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
