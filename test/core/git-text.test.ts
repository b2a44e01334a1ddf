import { describe, expect, it } from 'vitest';
import {
  changeOf,
  changesByPath,
  chunks,
  describeGitFailure,
  failureOf,
  isTrailerKey,
  parseStatus,
  parseStatusV2,
  parseTrailers,
  splitNul,
  subcommandOf,
} from '../../src/core/integration/git-text.ts';

describe('git status records', () => {
  it('parseStatus reads porcelain v1 -z records, skipping the origin of a rename or copy', () => {
    const output = [' M src/a.ts', '?? new file.txt', 'R  to.ts', 'from.ts', 'C  copy.ts', 'orig.ts', 'D  gone.ts', ''].join('\0');
    expect(parseStatus(output)).toEqual([
      { path: 'src/a.ts', xy: ' M' },
      { path: 'new file.txt', xy: '??' },
      { path: 'to.ts', xy: 'R ' },
      { path: 'copy.ts', xy: 'C ' },
      { path: 'gone.ts', xy: 'D ' },
    ]);
    expect(parseStatus('')).toEqual([]);
  });

  it('parseStatusV2 reads porcelain v2 --branch -z: HEAD, and each entry with its XY as v1 spells it', () => {
    const h = 'a'.repeat(40);
    const z = '0'.repeat(40);
    const output = [
      `# branch.oid ${h}`,
      '# branch.head main',
      `1 .M N... 100644 100644 100644 ${h} ${h} src/a b.ts`,
      `1 D. N... 100644 000000 000000 ${h} ${z} gone.ts`,
      `2 R. N... 100644 100644 100644 ${h} ${h} R100 to file.ts`,
      'from.ts',
      `u UU N... 100644 100644 100644 100644 ${h} ${h} ${h} conflict.ts`,
      '? new file.txt',
      '! ignored.log',
      '',
    ].join('\0');
    expect(parseStatusV2(output)).toEqual({
      head: h,
      entries: [
        { path: 'src/a b.ts', xy: ' M', head: { mode: '100644', object: h }, ordinary: true },
        { path: 'gone.ts', xy: 'D ', head: { mode: '100644', object: h }, ordinary: true },
        { path: 'to file.ts', xy: 'R ', head: null, ordinary: false },
        { path: 'conflict.ts', xy: 'UU', head: null, ordinary: false },
        { path: 'new file.txt', xy: '??', head: null, ordinary: true },
        { path: 'ignored.log', xy: '!!', head: null, ordinary: false },
      ],
    });
    expect(parseStatusV2(['# branch.oid (initial)', '# branch.head main', '? a.txt', ''].join('\0'))).toEqual({
      head: null,
      entries: [{ path: 'a.txt', xy: '??', head: null, ordinary: true }],
    });
    // Added in the index (HEAD has none), and a submodule's change: neither carries HEAD's entry as ordinary.
    const added = parseStatusV2([`1 A. N... 000000 100644 100644 ${z} ${h} added.ts`, `1 .M SC.. 160000 160000 160000 ${h} ${h} sub`, ''].join('\0'));
    expect(added.entries).toEqual([
      { path: 'added.ts', xy: 'A ', head: null, ordinary: true },
      { path: 'sub', xy: ' M', head: { mode: '160000', object: h }, ordinary: false },
    ]);
  });

  it('changeOf names every status code', () => {
    const codes: Record<string, string> = {
      '??': 'untracked',
      UU: 'unmerged',
      AA: 'unmerged',
      DU: 'unmerged',
      'A ': 'added',
      AM: 'added',
      'D ': 'deleted',
      ' D': 'deleted',
      'R ': 'renamed',
      'C ': 'copied',
      'T ': 'type-changed',
      ' T': 'type-changed',
      ' M': 'modified',
      MM: 'modified',
    };
    for (const [xy, change] of Object.entries(codes)) expect(changeOf(xy), xy).toBe(change);
  });

  it('changesByPath counts a file deleted in the index and back on disk as modified', () => {
    const changes = changesByPath([
      { path: 'a.ts', xy: 'D ' },
      { path: 'a.ts', xy: '??' },
      { path: 'b.ts', xy: ' M' },
    ]);
    expect([...changes]).toEqual([
      ['a.ts', 'modified'],
      ['b.ts', 'modified'],
    ]);
  });
});

describe('command lines and their failures', () => {
  it('subcommandOf skips options and the values of -c and -C', () => {
    expect(subcommandOf(['-c', 'core.hooksPath=/dev/null', '--literal-pathspecs', 'commit', '-m', 'x'])).toBe('commit');
    expect(subcommandOf(['-C', 'dir', 'status'])).toBe('status');
    expect(subcommandOf(['--version'])).toBe('command');
  });

  it('failureOf and describeGitFailure keep the end of what git said, on one line', () => {
    const failure = failureOf({
      args: ['--literal-pathspecs', 'add', '--', 'a'],
      exitCode: 128,
      stderr: `${'warning: noise\n'.repeat(100)}fatal: Unable to create '.git/index.lock': File exists.\n`,
    });
    expect(failure.step).toBe('add');
    const line = describeGitFailure(failure);
    expect(line).toMatch(/^git add failed \(exit 128\): …/);
    expect(line.endsWith("fatal: Unable to create '.git/index.lock': File exists.")).toBe(true);
    expect(line).not.toContain('\n');
    expect(describeGitFailure({ step: 'commit', exitCode: 1, stderr: '', indexNotRestored: 'locked' })).toBe(
      'git commit failed (exit 1): (no output); the index could not be put back either (locked): check `git status`',
    );
  });

  it('chunks and splitNul', () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunks([], 2)).toEqual([]);
    expect(chunks(Array.from({ length: 401 }, (_, i) => i)).map((slice) => slice.length)).toEqual([200, 200, 1]);
    expect(splitNul('a\0b c\0\0')).toEqual(['a', 'b c']);
  });
});

describe('trailers', () => {
  it('parseTrailers reads Key: value lines and ignores the rest', () => {
    expect(parseTrailers('Foreman-Plan: p-1\nForeman-Tasks:0,2\nnot a trailer\nForeman-Result: 0 COMPLETED: x: y \n')).toEqual([
      { key: 'Foreman-Plan', value: 'p-1' },
      { key: 'Foreman-Tasks', value: '0,2' },
      { key: 'Foreman-Result', value: '0 COMPLETED: x: y' },
    ]);
  });

  it('isTrailerKey accepts letters, digits and inner dashes only', () => {
    expect(['Foreman-Plan', 'A1', 'x'].every(isTrailerKey)).toBe(true);
    expect(['-A', 'Bad Key', 'a:b', ''].some(isTrailerKey)).toBe(false);
  });
});
