// Trees built over `cat-file --batch` and `mktree --batch` (src/adapters/git/trees.ts) are the
// trees git's own index makes from the same start and entries (`read-tree`, `update-index -z
// --index-info` with deletions first, `write-tree`): checked on arbitrary trees and changes,
// directories replacing files and the reverse included, and on names git stores as bytes.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TreeBuilder } from '../../src/adapters/git/trees.ts';
import { gitProcessCount } from '../../src/adapters/git/runner.ts';
import { indexInfo } from '../../src/core/integration/git-text.ts';
import type { WorkEntry } from '../../src/core/attempt/work.ts';
import { runGit, tempGitRepo, type TempGitRepo, withoutMachineGitConfig } from '../support/git-repo.ts';

withoutMachineGitConfig();

let repo: TempGitRepo;
let scratch: string;
let builder: TreeBuilder;
const blobs: string[] = [];

/** Git itself, as the oracle: its trimmed output. */
const git = async (args: string[], input = '', env: Record<string, string> = {}): Promise<string> => (await runGit(repo.dir, args, { input, env })).trim();

beforeAll(async () => {
  repo = await tempGitRepo({ 'README.md': 'r\n' });
  scratch = await mkdtemp(path.join(os.tmpdir(), 'foreman-trees-'));
  for (const content of ['one\n', 'two\n', 'three\n', 'target\n']) blobs.push(await git(['hash-object', '-w', '--stdin'], content));
  builder = new TreeBuilder(repo.dir);
});
afterAll(async () => {
  builder.close();
  await repo.cleanup();
  await rm(scratch, { recursive: true, force: true });
});

let indexes = 0;
/** What git's own index makes of `entries` over `start`'s tree. */
async function indexTree(start: string | null, entries: readonly WorkEntry[]): Promise<string> {
  const env = { GIT_INDEX_FILE: path.join(scratch, `index-${indexes++}`) };
  if (start === null) await git(['read-tree', '--empty'], '', env);
  else await git(['read-tree', start], '', env);
  if (entries.length > 0) await git(['update-index', '-z', '--index-info'], indexInfo(entries, blobs[0]!), env);
  return git(['write-tree'], '', env);
}

/** A commit of the tree git's index makes of `entries` (the start of a case). */
const commitOf = async (entries: readonly WorkEntry[]): Promise<string> => git(['commit-tree', await indexTree(null, entries), '-m', 'start']);

// Few names, so paths meet: the same file, a file where a directory was, and the reverse.
const name = fc.constantFrom('a', 'b', 'c', 'a b', 'é');
const aPath = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
const blob = fc.integer({ min: 0, max: 3 });
const mode = fc.constantFrom('100644', '100644', '100755', '120000');
const entry: fc.Arbitrary<WorkEntry> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ path: aPath, mode, blob }).map(({ path: p, mode: m, blob: b }) => ({ path: p, mode: m, object: blobs[b]! })) },
  { weight: 1, arbitrary: aPath.map((p) => ({ path: p, deleted: true as const })) },
);
/** A start tree: files only, no path twice, none both a file and a directory. */
const startFiles = fc
  .uniqueArray(fc.record({ path: aPath, mode, blob }), { selector: (f) => f.path, maxLength: 8 })
  .map((files) =>
    files.filter((f) => !files.some((g) => g.path.startsWith(`${f.path}/`))).map((f): WorkEntry => ({ path: f.path, mode: f.mode, object: blobs[f.blob]! })),
  );

describe('TreeBuilder', () => {
  it("makes the tree git's index makes, for any start and any entries", async () => {
    await fc.assert(
      fc.asyncProperty(startFiles, fc.array(entry, { maxLength: 6 }), async (files, changes) => {
        const start = await commitOf(files);
        const built = await builder.treeWith(start, changes);
        expect(built).toEqual({ ok: true, value: await indexTree(start, changes) });
      }),
      { numRuns: 60 },
    );
  });

  it('keeps two processes for any number of trees, and reads no tree twice', async () => {
    const start = await commitOf([{ path: 'x/y', mode: '100644', object: blobs[0]! }]);
    const local = new TreeBuilder(repo.dir);
    const before = gitProcessCount();
    for (let k = 0; k < 5; k++) {
      const built = await local.treeWith(start, [{ path: `x/new-${k}`, mode: '100644', object: blobs[1]! }]);
      expect(built.ok).toBe(true);
    }
    expect(gitProcessCount() - before).toBe(2);
    local.close();
  });

  it('writes a submodule entry, names with a tab or a line break, and a tree left empty', async () => {
    const start = await commitOf([{ path: 'gone/only', mode: '100644', object: blobs[0]! }]);
    const changes: WorkEntry[] = [
      { path: 'gone/only', deleted: true },
      { path: 'lib/sub', mode: '160000', object: '1'.repeat(40) },
      { path: 'odd\tname\nhere', mode: '100644', object: blobs[2]! },
    ];
    const built = await builder.treeWith(start, changes);
    expect(built).toEqual({ ok: true, value: await indexTree(start, changes) });
    expect((await git(['ls-tree', '-r', '--name-only', '-z', built.ok ? built.value : ''])).split('\0').filter(Boolean)).toEqual([
      'lib/sub',
      'odd\tname\nhere',
    ]);
  });

  it('says what went wrong for a blob git does not have or a start that is no commit, and works again after', async () => {
    const start = await commitOf([{ path: 'f', mode: '100644', object: blobs[0]! }]);
    const missing = await builder.treeWith(start, [{ path: 'f', mode: '100644', object: 'f'.repeat(40) }]);
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.error.stderr).toMatch(/f{40}/);
    const notCommit = await builder.treeWith(blobs[0]!, []);
    expect(!notCommit.ok && notCommit.error.stderr).toContain('is not a commit');
    const fine = await builder.treeWith(start, [{ path: 'f', mode: '100644', object: blobs[1]! }]);
    expect(fine).toEqual({ ok: true, value: await indexTree(start, [{ path: 'f', mode: '100644', object: blobs[1]! }]) });
  });
});
