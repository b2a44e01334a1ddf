// The files an acceptance check needs before anything in it runs (src/core/plan/lint/check-paths.ts): a table
// of commands with exactly the paths read from each, the cases it must not read anything from
// among them, so that the lint's warning does not cry wolf.

import { describe, expect, it } from 'vitest';
import { checkPaths } from '../../src/core/plan/lint/check-paths.ts';

const file = (path: string) => ({ path, directory: false });
const directory = (path: string) => ({ path, directory: true });

const CASES: Array<[string, Array<{ path: string; directory: boolean }>]> = [
  // File tests.
  ['test -f dist/x.mjs', [file('dist/x.mjs')]],
  ['[ -s out/a.txt ]', [file('out/a.txt')]],
  ['[[ -d build ]]', [directory('build')]],
  ['test -d build/', [directory('build')]],
  ['test -f "dist/my file.js"', [file('dist/my file.js')]],
  ['test -e README.md -a -r LICENSE', [file('README.md'), file('LICENSE')]],
  ['test -f ./dist/x.mjs', [file('dist/x.mjs')]],
  // Readers: every operand that looks like a path; grep's after its pattern.
  ['cat src/a.ts', [file('src/a.ts')]],
  ['diff -u expected/a.txt actual/a.txt', [file('expected/a.txt'), file('actual/a.txt')]],
  ['head -n 5 src/a.ts | grep -q x', [file('src/a.ts')]],
  ['grep -q "export const" src/a.ts src/b.ts', [file('src/a.ts'), file('src/b.ts')]],
  ['grep -A 3 "a.b" src/x.ts', [file('src/x.ts')]],
  ['cat < input/data.json', [file('input/data.json')]],
  // Scripts and commands run by their path, and nothing after them.
  ['node scripts/check.mjs && test -f out.json', [file('scripts/check.mjs')]],
  ['CI=1 node test/run.mjs', [file('test/run.mjs')]],
  ['./bin/tool --version; test -f made-by-tool.txt', [file('bin/tool')]],
  ['test -f a.txt && test -f b.txt', [file('a.txt'), file('b.txt')]],
  ['test -f a.txt; test -f a.txt', [file('a.txt')]],
  ['test -f a.txt && test ! -e junk/stray.txt && grep -q hello README.md', [file('a.txt'), file('README.md')]],
  ['test -f a.txt -o -f b.txt && cat c.txt', [file('c.txt')]],
  // What it must not read: a command that may make files first, output, tolerated or negated
  // tests, shell code it does not follow, expansions, paths outside the repository, options' values.
  ['npm run build && test -f dist/x.mjs', []],
  ['npm test > log/out.txt 2>&1', []],
  ['echo ok > out/log.txt && test -f out/log.txt', []],
  ['test ! -f x.txt', []],
  ['! test -f x.txt', []],
  ['test -f a.txt || echo none', []],
  ['false || test -f a.txt', []],
  ['test -f a.txt -o -f b.txt', []],
  ['test -f x.txt &', []],
  ['if [ -f a.txt ]; then echo; fi', []],
  ['for f in a b; do test -f $f; done', []],
  ['echo $(cat x.txt)', []],
  ['test "`cat x.txt`" = y', []],
  ['cat <<EOF > x.txt\nhi\nEOF', []],
  ['(cd sub && test -f a.txt)', []],
  ['test -f $HOME/x.txt', []],
  ['wc -l src/*.ts', []],
  ['test -f ~/x.txt', []],
  ['test -f /etc/passwd', []],
  ['test -f ../x.ts', []],
  ['test -f .git/HEAD', []],
  ['grep -e foo src/a.ts', []],
  ['node -e "require(\'./x.js\')"', []],
  ['node --test test/a.test.mjs test/b.test.mjs', [file('test/a.test.mjs'), file('test/b.test.mjs')]],
  ['node --test --test-name-pattern "a.b" test/a.test.mjs', [file('test/a.test.mjs')]],
  ['node --test', []],
  ['node --test "test/**/*.test.mjs"', []],
  ['python3 -m pytest tests/test_a.py', []],
  ['sh -c "test -f x.txt"', []],
  ['npx vitest run test/a.test.ts', []],
  ['curl -fsS http://localhost:8080/health.json', []],
  ['test -f "unterminated', []],
  ['', []],
];

describe('the files an acceptance check needs', () => {
  it.each(CASES)('%j', (check, expected) => {
    expect(checkPaths(check)).toEqual(expected);
  });
});
