import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coveredBy, pathProblem, pathsIntersect } from '../../src/core/plan/paths.ts';
import { PATH_POOL, touchBrute } from '../support/arbitraries.ts';

describe('pathProblem', () => {
  it.each([
    'src/a.ts',
    'src/',
    'src/lib/deep/x.ts',
    'README.md',
    '.gitignore',
    '.github/workflows/ci.yml',
    '.designs/x',
    'a..b/c',
    '...',
    'src/.hidden',
    'C',
    'docs/~draft.md',
    'a~',
  ])('accepts %j', (p) => {
    expect(pathProblem(p)).toBeNull();
  });

  it.each([
    ['', 'is empty'],
    ['a\0b', 'contains a NUL byte'],
    ['src\\a.ts', '"src\\a.ts" uses a backslash; write paths with "/"'],
    ['C:\\x\\a.ts', '"C:\\x\\a.ts" uses a backslash'],
    ['C:/x/a.ts', '"C:/x/a.ts" is absolute; paths are relative to the repository root'],
    ['c:a.ts', '"c:a.ts" is absolute'],
    ['/etc/x', '"/etc/x" is absolute'],
    ['/', '"/" is absolute'],
    ['../x', '"../x" leaves the repository'],
    ['..', '".." leaves the repository'],
    ['../', '"../" leaves the repository'],
    ['src/../../x', '"src/../../x" leaves the repository'],
    ['a/../b', '"a/../b" is not normalised (write "b")'],
    ['a/..', '"a/.." names the whole repository'],
    ['.', '"." names the whole repository'],
    ['./', '"./" names the whole repository'],
    ['./src/a.ts', '"./src/a.ts" is not normalised (write "src/a.ts")'],
    ['src/./a.ts', '"src/./a.ts" is not normalised (write "src/a.ts")'],
    ['a//b', '"a//b" is not normalised (write "a/b")'],
    ['src//', '"src//" is not normalised (write "src/")'],
    ['./src/', '"./src/" is not normalised (write "src/")'],
    ['.git', '".git" is inside .git/, which a task may not touch'],
    ['.git/', '".git/" is inside .git/'],
    ['.git/hooks/x', '".git/hooks/x" is inside .git/'],
    ['.design/plan.json', '".design/plan.json" is inside .design/'],
    ['.design/', '".design/" is inside .design/'],
    ['.GIT/hooks/pre-commit', '".GIT/hooks/pre-commit" is inside .git/'],
    ['.Design/plan.json', '".Design/plan.json" is inside .design/'],
    ['~/.bashrc', '"~/.bashrc" starts with ~, which Claude Code and the shell read as a home folder'],
    ['~', '"~" starts with ~'],
    ['~root/x', '"~root/x" starts with ~'],
    ['~x.txt', '"~x.txt" starts with ~'],
  ])('refuses %j', (p, message) => {
    const problem = pathProblem(p);
    expect(problem).not.toBeNull();
    expect(problem!.startsWith(message), `${problem}`).toBe(true);
  });

  it('suggests a normalised form that is itself accepted', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('src', 'a.ts', '.', '', 'lib', 'x'), { minLength: 1, maxLength: 5 }), fc.boolean(), (segments, dir) => {
        const p = segments.join('/') + (dir ? '/' : '');
        const problem = pathProblem(p);
        const m = problem?.match(/is not normalised \(write "(.*)"\)$/);
        if (m) expect(pathProblem(m[1]!)).toBeNull();
      }),
      { numRuns: 300 },
    );
  });
});

describe('pathsIntersect and coveredBy', () => {
  it.each([
    ['src/a.ts', 'src/a.ts', true],
    ['src/', 'src/a.ts', true],
    ['src/', 'src/lib/c.ts', true],
    ['src/', 'src/lib/', true],
    ['src/', 'src', true],
    ['src/', 'srcx/e.ts', false],
    ['src/a.ts', 'src/a.tsx', false],
    ['src/lib/', 'src/a.ts', false],
    ['docs/', 'src/', false],
  ] as const)('%s vs %s → %s', (a, b, expected) => {
    expect(pathsIntersect(a, b)).toBe(expected);
    expect(pathsIntersect(b, a)).toBe(expected);
  });

  it('matches the brute-force definition on the path pool', () => {
    for (const a of PATH_POOL) for (const b of PATH_POOL) expect(pathsIntersect(a, b), `${a} ${b}`).toBe(touchBrute(a, b));
  });

  it('coveredBy: declared exactly or under a declared directory', () => {
    expect(coveredBy('src/a.ts', ['src/a.ts'])).toBe(true);
    expect(coveredBy('src/lib/c.ts', ['docs/', 'src/'])).toBe(true);
    expect(coveredBy('srcx/e.ts', ['src/'])).toBe(false);
    expect(coveredBy('src/a.ts', ['src'])).toBe(false);
    expect(coveredBy('src/a.ts', [])).toBe(false);
  });
});
