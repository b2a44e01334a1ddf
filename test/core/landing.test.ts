import { describe, expect, it } from 'vitest';
import type { Layout } from '../../src/core/command-hint.ts';
import {
  describeLandingProblem,
  type Entry,
  type FileObservation,
  type IndexObservation,
  judgeLanding,
  landingProblemSentence,
  type PathObservation,
  pathState,
} from '../../src/core/integration/landing.ts';

const A: Entry = { mode: '100644', object: 'a'.repeat(40) };
const B: Entry = { mode: '100644', object: 'b'.repeat(40) };
const C: Entry = { mode: '100644', object: 'c'.repeat(40) };
const A_EXEC: Entry = { mode: '100755', object: A.object };
const LINK: Entry = { mode: '120000', object: 'd'.repeat(40) };
const SUBMODULE: Entry = { mode: '160000', object: 'e'.repeat(40) };

const inIndex = (entry: Entry | null): IndexObservation => (entry === null ? { kind: 'absent' } : { kind: 'entry', entry });
const onDisk = (entry: Entry | null): FileObservation => (entry === null ? { kind: 'absent' } : { kind: 'file', entry });

/** A path moving from `from` to `to`, untouched by the person unless `index`/`file` say otherwise. */
function observed(
  path: string,
  from: Entry | null,
  to: Entry | null,
  person: { index?: IndexObservation; file?: FileObservation; unstaged?: Entry | null; obstacle?: string } = {},
): PathObservation {
  return {
    path,
    from,
    to,
    unstaged: person.unstaged === undefined ? from : person.unstaged,
    index: person.index ?? inIndex(from),
    file: person.file ?? onDisk(from),
    ...(person.obstacle === undefined ? {} : { obstacle: person.obstacle }),
  };
}

const commit = { mode: 'commit' } as const;
const worktree = { mode: 'worktree' } as const;

describe('pathState, commit mode', () => {
  it('untouched paths are updatable: modified, added, deleted', () => {
    expect(pathState(observed('m', A, B), commit)).toEqual({ kind: 'from' });
    expect(pathState(observed('n', null, B), commit)).toEqual({ kind: 'from' });
    expect(pathState(observed('d', A, null), commit)).toEqual({ kind: 'from' });
  });

  it("a path whose index and file are already the tip's is done", () => {
    expect(pathState(observed('m', A, B, { index: inIndex(B), file: onDisk(B) }), commit)).toEqual({ kind: 'to' });
    expect(pathState(observed('d', A, null, { index: inIndex(null), file: onDisk(null) }), commit)).toEqual({ kind: 'to' });
  });

  it("the person's changes block, each with its reason", () => {
    expect(pathState(observed('m', A, B, { index: inIndex(C), file: onDisk(C) }), commit)).toEqual({ kind: 'changed', why: 'staged' });
    expect(pathState(observed('m', A, B, { index: { kind: 'conflicted' } }), commit)).toEqual({ kind: 'changed', why: 'staged' });
    expect(pathState(observed('m', A, B, { file: onDisk(C) }), commit)).toEqual({ kind: 'changed', why: 'modified' });
    expect(pathState(observed('m', A, B, { file: onDisk(null) }), commit)).toEqual({ kind: 'changed', why: 'deleted' });
    expect(pathState(observed('n', null, B, { file: onDisk(C) }), commit)).toEqual({ kind: 'changed', why: 'untracked' });
    expect(pathState(observed('n', null, B, { index: inIndex(C), file: onDisk(C) }), commit)).toEqual({ kind: 'changed', why: 'staged' });
    expect(pathState(observed('m', A, B, { file: onDisk(A_EXEC) }), commit)).toEqual({ kind: 'changed', why: 'modified' });
    expect(pathState(observed('m', A, B, { file: onDisk(LINK) }), commit)).toEqual({ kind: 'changed', why: 'modified' });
  });

  it("a file already holding the tip's content loses nothing: updatable", () => {
    expect(pathState(observed('m', A, B, { file: onDisk(B) }), commit)).toEqual({ kind: 'from' });
    expect(pathState(observed('n', null, B, { file: onDisk(B) }), commit)).toEqual({ kind: 'from' });
    expect(pathState(observed('d', A, null, { file: onDisk(null) }), commit)).toEqual({ kind: 'from' });
  });

  it('index at the tip with the file still at from is a cut-short landing only when resuming', () => {
    const halfway = observed('m', A, B, { index: inIndex(B) });
    expect(pathState(halfway, commit)).toEqual({ kind: 'changed', why: 'staged' });
    expect(pathState(halfway, { mode: 'commit', resuming: true })).toEqual({ kind: 'from' });
    expect(pathState(observed('m', A, B, { index: inIndex(B), file: onDisk(C) }), { mode: 'commit', resuming: true })).toEqual({
      kind: 'changed',
      why: 'modified',
    });
  });

  it('the exec bit is not compared when core.fileMode is false', () => {
    const exec = observed('m', A, B, { file: onDisk(A_EXEC) });
    expect(pathState(exec, { mode: 'commit', fileMode: false })).toEqual({ kind: 'from' });
    // A symlink is never a regular file, whatever core.fileMode says.
    expect(pathState(observed('m', A, B, { file: onDisk({ mode: '120000', object: A.object }) }), { mode: 'commit', fileMode: false })).toEqual({
      kind: 'changed',
      why: 'modified',
    });
  });

  it('a submodule matches its directory or its absence', () => {
    expect(pathState(observed('s', SUBMODULE, { ...SUBMODULE, object: 'f'.repeat(40) }, { file: { kind: 'directory', files: ['s/x'] } }), commit)).toEqual({
      kind: 'from',
    });
    expect(pathState(observed('s', SUBMODULE, null, { file: onDisk(null) }), commit)).toEqual({ kind: 'from' });
  });
});

describe('pathState, worktree mode', () => {
  it("nothing staged means the index equals HEAD's entry, not base's", () => {
    // An earlier --no-commit landing left B on disk; HEAD still has A.
    expect(pathState(observed('m', B, C, { unstaged: A, index: inIndex(A), file: onDisk(B) }), worktree)).toEqual({ kind: 'from' });
    expect(pathState(observed('m', B, C, { unstaged: A, index: inIndex(B), file: onDisk(B) }), worktree)).toEqual({ kind: 'changed', why: 'staged' });
    expect(pathState(observed('m', B, C, { unstaged: A, index: inIndex(A), file: onDisk(A) }), worktree)).toEqual({ kind: 'changed', why: 'modified' });
    expect(pathState(observed('m', B, C, { unstaged: A, index: inIndex(A), file: onDisk(C) }), worktree)).toEqual({ kind: 'to' });
    expect(pathState(observed('n', null, C, { unstaged: null, file: onDisk(A) }), worktree)).toEqual({ kind: 'changed', why: 'untracked' });
  });
});

describe('judgeLanding', () => {
  it('sorts paths into update, done and blocked, every blocked path listed', () => {
    const judgement = judgeLanding(
      [
        observed('z.txt', A, B),
        observed('done.txt', A, B, { index: inIndex(B), file: onDisk(B) }),
        observed('b.txt', A, B, { file: onDisk(C) }),
        observed('a.txt', null, B, { file: onDisk(C) }),
        observed('c.txt', A, null),
      ],
      commit,
    );
    expect(judgement).toEqual({
      update: ['c.txt', 'z.txt'],
      done: ['done.txt'],
      blocked: [
        { path: 'a.txt', why: 'untracked' },
        { path: 'b.txt', why: 'modified' },
      ],
    });
  });

  it('a directory where the tip puts a file counts as absent only when everything in it goes away', () => {
    const emptied = [observed('d/x', A, null), observed('d/y/z', A, null), observed('d', null, B, { file: { kind: 'directory', files: ['d/x', 'd/y/z'] } })];
    expect(judgeLanding(emptied, commit)).toEqual({ update: ['d', 'd/x', 'd/y/z'], done: [], blocked: [] });

    const kept = [observed('d/x', A, null), observed('d', null, B, { file: { kind: 'directory', files: ['d/x', 'd/mine'] } })];
    expect(judgeLanding(kept, commit).blocked).toEqual([{ path: 'd', why: 'untracked' }]);

    const editedInside = [observed('d/x', A, null, { file: onDisk(C) }), observed('d', null, B, { file: { kind: 'directory', files: ['d/x'] } })];
    expect(judgeLanding(editedInside, commit).blocked).toEqual([
      { path: 'd', why: 'untracked' },
      { path: 'd/x', why: 'modified' },
    ]);
  });

  it('a file standing where the tip needs a directory blocks unless the landing deletes it', () => {
    expect(judgeLanding([observed('a', A, null, { file: onDisk(A) }), observed('a/b', null, B, { obstacle: 'a' })], commit)).toEqual({
      update: ['a', 'a/b'],
      done: [],
      blocked: [],
    });
    expect(judgeLanding([observed('a/b', null, B, { obstacle: 'a' })], commit).blocked).toEqual([{ path: 'a', why: 'untracked' }]);
    expect(judgeLanding([observed('a/b', null, B, { obstacle: 'a' }), observed('a/c', null, B, { obstacle: 'a' })], commit).blocked).toEqual([
      { path: 'a', why: 'untracked' },
    ]);
  });
});

describe('describeLandingProblem', () => {
  const ref = 'refs/foreman/p1';
  const checkout: Layout = { kind: 'checkout' };
  it('says what blocks landing and how to land by hand', () => {
    const local = describeLandingProblem(
      {
        kind: 'local-changes',
        paths: [
          { path: 'src/a.ts', why: 'modified' },
          { path: 'b.md', why: 'staged' },
        ],
      },
      ref,
      checkout,
    );
    expect(local).toHaveLength(2);
    expect(local[0]).toBe('not landed: 2 files it would update have local changes: src/a.ts (modified), b.md (staged)');
    expect(local[1]).toContain('`npx tsx scripts/plan.ts land`');
    expect(local[1]).toContain(`git merge --ff-only ${ref}`);

    const switched = describeLandingProblem({ kind: 'branch-switched', expected: 'refs/heads/main', actual: null }, ref, checkout);
    expect(switched[0]).toBe('not landed: HEAD is on a detached HEAD, not on main where the run started');
    expect(switched[1]).toContain(`git merge --ff-only ${ref}`);

    const diverged = describeLandingProblem({ kind: 'diverged', head: '1'.repeat(40), tip: '2'.repeat(40) }, ref, checkout);
    expect(diverged[0]).toContain('111111111111 is not an ancestor of 222222222222');
    expect(diverged[1]).toContain(`git merge ${ref}`);

    const failed = describeLandingProblem(
      { kind: 'git-failed', failure: { step: 'update-index', exitCode: 128, stderr: "fatal: Unable to create '/r/.git/index.lock': File exists.\n" } },
      ref,
      checkout,
    );
    expect(failed[0]).toContain('git update-index failed (exit 128)');
    expect(failed[0]).toContain('index.lock');
    expect(failed[1]).toContain('try again');

    const intent = describeLandingProblem({ kind: 'bad-intent', intentPath: '/r/.design/landing.json', reason: 'not JSON' }, ref, checkout);
    expect(intent[0]).toContain('/r/.design/landing.json');
    expect(intent[1]).toContain('`npx tsx scripts/plan.ts land`');
  });

  it('reads as one sentence on one line: the problem, then what to do', () => {
    const lines = describeLandingProblem({ kind: 'local-changes', paths: [{ path: 'src/a.ts', why: 'untracked' }] }, ref, checkout);
    expect(landingProblemSentence(lines)).toBe(
      `not landed: a file it would update has local changes: src/a.ts (untracked); commit, stash or undo them, then land it with \`npx tsx scripts/plan.ts land\`, or by hand with \`git merge --ff-only ${ref}\`.`,
    );
    expect(landingProblemSentence([])).toBe('');
  });

  it("names the plugin's launcher when the code is the built plugin's", () => {
    const [, byHand] = describeLandingProblem({ kind: 'branch-switched', expected: 'refs/heads/main', actual: null }, ref, {
      kind: 'plugin',
      launcher: '/p/foreman/bin/foreman',
    });
    expect(byHand).toBe(`switch back to main and land it with \`/p/foreman/bin/foreman plan land\`, or by hand with \`git merge --ff-only ${ref}\``);
  });

  it('lists at most ten paths and counts the rest', () => {
    const paths = Array.from({ length: 13 }, (_, index) => ({ path: `f${index}`, why: 'modified' as const }));
    const [line] = describeLandingProblem({ kind: 'local-changes', paths }, ref, checkout);
    expect(line).toContain('f9 (modified), and 3 more');
    expect(line).not.toContain('f10');
  });
});
