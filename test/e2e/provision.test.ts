// Provisioning with a real dependency (issue 12, "Provisioning"): a sample project of our own
// (test/fixtures/provision-sample) whose tests `require` the devDependency is-number, installed
// from the npm registry by the plan's `context.setupCommand: "npm ci"` in each worktree. Fake
// workers write the code; the acceptance checks run the project's real test command.

import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Plan } from '../../src/core/plan/plan.ts';
import { fakeEvents, leftovers, repoWithPlan } from '../support/fake-run.ts';
import { repoRoot, runExecute } from '../support/execute.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const { repos } = leftovers();

const sample = join(repoRoot, 'test/fixtures/provision-sample');
const read = (file: string) => readFile(join(sample, file), 'utf8');

/** A module and its test; the test needs is-number (and whatever `requires` adds) installed. */
function moduleTask(name: string, body: string, check: string, options: { blockedBy?: number[]; requires?: string[] } = {}) {
  const requires = (options.requires ?? []).map((dependency) => `const ${dependency.replace(/\W/g, '_')} = require('${dependency}');\n`).join('');
  const test = `const test = require('node:test');\nconst assert = require('node:assert');\nconst isNumber = require('is-number');\n${requires}const { ${name} } = require('../src/${name}.js');\n\ntest('${name}', () => {\n  ${check}\n});\n`;
  return fakeTask(name, {
    create: [`src/${name}.js`, `test/${name}.test.js`],
    blockedBy: options.blockedBy ?? [],
    acceptance: [{ criterion: `the ${name} test passes`, check: `npm test -- test/${name}.test.js` }],
    fake: { write: { [`src/${name}.js`]: `${body}\n`, [`test/${name}.test.js`]: test }, status: `COMPLETED: src/${name}.js with its test` },
  });
}

interface JsonEvent {
  type: string;
  task?: number;
  outcome?: string;
  level?: string;
  message?: string;
}

describe("provisioning worktrees with the plan's setup command (npm ci, a real devDependency)", () => {
  it("parallel tasks pass their npm test checks first time; a task that adds a dependency makes the setup run again for the tasks after it; nothing installed reaches the person's tree", async () => {
    const withMs = { 'package.json': await read('with-ms/package.json'), 'package-lock.json': await read('with-ms/package-lock.json') };
    const plan: Plan = makePlan(
      [
        moduleTask('sum', 'exports.sum = (a, b) => a + b;', 'assert.ok(isNumber(sum(2, 3)));\n  assert.strictEqual(sum(2, 3), 5);'),
        moduleTask('square', 'exports.square = (n) => n * n;', 'assert.ok(isNumber(square(4)));\n  assert.strictEqual(square(4), 16);'),
        fakeTask('add-ms', {
          modify: ['package.json', 'package-lock.json'],
          blockedBy: [0, 1],
          // What `npm install ms` leaves in the tracked files (node_modules/ is ignored: never the task's).
          acceptance: [{ criterion: 'ms is locked', check: `node -e "process.exit(require('./package-lock.json').packages['node_modules/ms'] ? 0 : 1)"` }],
          fake: { write: withMs, status: 'COMPLETED: added the dependency ms' },
        }),
        // Both after add-ms, in parallel, in the two worktrees the tasks before them used.
        moduleTask(
          'duration',
          "const ms = require('ms');\nexports.duration = (seconds) => ms(seconds * 1000);",
          "assert.strictEqual(duration(2), '2s');\n  assert.ok(isNumber(ms('2s')));",
          { blockedBy: [2], requires: ['ms'] },
        ),
        moduleTask('cube', 'exports.cube = (n) => n * n * n;', 'assert.ok(isNumber(cube(2)));\n  assert.strictEqual(cube(2), 8);', { blockedBy: [2] }),
      ],
      { context: { setupCommand: 'npm ci', testCommand: 'npm test' } },
    );
    const files: Record<string, string> = {
      '.gitignore': await read('.gitignore'),
      'package.json': await read('package.json'),
      'package-lock.json': await read('package-lock.json'),
    };
    const { repo, journal, env } = await repoWithPlan(plan, repos, files);

    // The default --sandbox (auto): where the sandbox works, `npm ci` runs in it and reaches the
    // registry through its proxy; the checks run in it with no network at all.
    // Without speculation the gate has its slot to itself before the tasks after add-ms start, so
    // they reuse the two slots the tasks before them used (speculating, they run beside the gate's
    // run and a third slot is made).
    const r = await runExecute(repo.dir, ['--json', '--concurrency', '2', '--no-speculate'], env);
    expect(r.stderr).toBe('');
    expect(r.exitCode, r.stdout).toBe(0);
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as JsonEvent);

    // Every task passed its checks on its first attempt: the worktrees had is-number (and, after add-ms, ms).
    const finished = events.filter((e) => e.type === 'task-finished');
    expect(finished.map((e) => [e.task, e.outcome]).sort()).toEqual([0, 1, 2, 3, 4].map((task) => [task, 'completed']));

    // The setup ran once in each new worktree, not again when add-ms reused one with the same
    // lock file, and again in both worktrees the tasks after add-ms reused.
    const setups = events.flatMap((e, index) => (e.type === 'notice' && /^set up the worktree /.test(e.message ?? '') ? [{ index, message: e.message! }] : []));
    for (const setup of setups) expect(setup.message).toMatch(/^set up the worktree slot-\d+ with `npm ci` \(\d+\.\d s\)$/);
    const addedMs = events.findIndex((e) => e.type === 'task-finished' && e.task === 2);
    const before = setups.filter((setup) => setup.index < addedMs);
    const after = setups.filter((setup) => setup.index > addedMs);
    expect(before.map((setup) => setup.message.split(' ')[4]).sort()).toEqual(['slot-0', 'slot-1']);
    expect(after.map((setup) => setup.message.split(' ')[4]).sort()).toEqual(['slot-0', 'slot-1']);
    expect(setups).toHaveLength(4);

    // …in the very worktrees the earlier tasks worked in (reused, not made anew).
    const starts = (await fakeEvents(journal)).filter((e) => e.event === 'start') as Array<{ taskMarker?: string; cwd?: string }>;
    const cwdOf = (marker: string) => starts.find((e) => e.taskMarker === marker)?.cwd ?? '';
    const earlier = new Set(['sum', 'square', 'add-ms'].map(cwdOf));
    for (const marker of ['duration', 'cube']) {
      expect(earlier.has(cwdOf(marker)), marker).toBe(true);
      expect(after.map((setup) => setup.message.split(' ')[4])).toContain(basename(cwdOf(marker)));
    }
    for (const start of starts) expect(start.cwd?.startsWith(repo.dir)).toBe(false);

    // Everything landed in the person's repository, committed; nothing installed or built there.
    expect(JSON.parse(await readFile(join(repo.dir, 'package.json'), 'utf8')).dependencies).toEqual({ ms: '2.1.3' });
    const tracked = (await repo.git(['ls-files'])).split('\n').filter(Boolean).sort();
    expect(tracked).toEqual([
      '.gitignore',
      'package-lock.json',
      'package.json',
      'src/cube.js',
      'src/duration.js',
      'src/square.js',
      'src/sum.js',
      'test/cube.test.js',
      'test/duration.test.js',
      'test/square.test.js',
      'test/sum.test.js',
    ]);
    expect(existsSync(join(repo.dir, 'node_modules'))).toBe(false);
    const status = (await repo.git(['status', '--porcelain', '--ignored', '--untracked-files=all'])).split('\n').filter(Boolean);
    expect(status.filter((line) => !line.slice(3).startsWith('.design/'))).toEqual([]);
    expect(await readdir(join(repo.dir, '.design'))).not.toContain('node_modules');

    // The finished plan leaves no worktree behind.
    expect((await repo.git(['worktree', 'list', '--porcelain'])).match(/^worktree /gm)).toHaveLength(1);
    for (const cwd of earlier) expect(existsSync(cwd), cwd).toBe(false);
  }, 240_000);
});
