// plan land, plan clean, plan status's isolation lines, and approve/reject with parked work, on
// real git repositories. In process (runProgram), with FOREMAN_WORKTREES in a temp directory.

import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { acquireLock, currentLockInfo } from '../../src/adapters/store/run-lock.ts';
import { poolDir } from '../../src/adapters/git/pool-slots.ts';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import type { Plan, Task } from '../../src/core/plan/plan.ts';
import { afterEachCleanups, runGit, type TempGitRepo, tempRepoIn } from '../support/git-repo.ts';

const cleanups = afterEachCleanups();
const newRepo = tempRepoIn(cleanups);

const PLAN_ID = 'plan-one';
const REF = `refs/foreman/${PLAN_ID}`;

const task = (subject: string, file: string, extra: Partial<Task> = {}): Task => ({
  subject,
  blockedBy: [],
  metadata: { files: { create: [], modify: [file] } },
  prompt: `Do ${subject}.`,
  status: 'pending',
  attempts: 0,
  ...extra,
});

let repo: TempGitRepo;
let worktrees: string;
let out: string[];
let errs: string[];
const planPath = () => path.join(repo.dir, '.design', 'plan.json');
const io = (): Io => ({ out: (t) => out.push(t), err: (t) => errs.push(t), cwd: repo.dir, env: { FOREMAN_WORKTREES: worktrees }, isTTY: false, columns: 120 });
const run = (...argv: string[]) => runProgram('plan.ts', planCommands, argv, io());
const git = (...args: string[]) => repo.git(args).then((s) => s.trimEnd());
const readPlan = (file = planPath()): Plan => JSON.parse(readFileSync(file, 'utf8')) as Plan;
const writePlan = (plan: Plan, file = planPath()) => writeFileSync(file, `${JSON.stringify(plan, null, 2)}\n`);
const read = (file: string) => readFileSync(path.join(repo.dir, file), 'utf8');
const refExists = async (ref: string) => (await repo.git(['for-each-ref', '--format=%(refname)', ref])).trim() === ref;

function plan(tasks: Task[], planId: string | null = PLAN_ID): Plan {
  return { schemaVersion: 3, goal: 'isolate', ...(planId ? { planId } : {}), tasks };
}

/** A commit of `files` on top of `parent` (default HEAD), made without touching the working tree or index. */
async function commitOn(files: Record<string, string>, parent = 'HEAD', message = 'foreman: integrated'): Promise<string> {
  const index = path.join(repo.dir, '.git', `test-index-${Math.random().toString(16).slice(2)}`);
  const run = async (args: string[], input?: string) =>
    (await runGit(repo.dir, args, { env: { GIT_INDEX_FILE: index }, ...(input !== undefined ? { input } : {}) })).trim();
  await run(['read-tree', parent]);
  for (const [file, content] of Object.entries(files)) {
    const blob = await run(['hash-object', '-w', '--stdin'], content);
    await run(['update-index', '--add', '--cacheinfo', `100644,${blob},${file}`]);
  }
  const tree = await run(['write-tree']);
  const commit = await run(['commit-tree', tree, '-p', parent, '-m', message]);
  await rm(index, { force: true });
  return commit;
}

/** Integrated work on the plan's ref: a commit of `files` on top of the ref (or HEAD). */
async function integrate(files: Record<string, string>): Promise<string> {
  const parent = (await refExists(REF)) ? REF : 'HEAD';
  const commit = await commitOn(files, parent);
  await git('update-ref', REF, commit);
  return commit;
}

/** A real worktree in the plan's pool, as a run leaves it. */
async function poolSlot(planId: string, index = 0): Promise<string> {
  const dir = path.join(poolDir(worktrees, repo.dir, planId), `slot-${index}`);
  await mkdir(path.dirname(dir), { recursive: true });
  await git('worktree', 'add', '--detach', dir, 'HEAD');
  writeFileSync(path.join(dir, 'build-output.bin'), Buffer.alloc(64 * 1024, 1));
  return dir;
}

beforeEach(async () => {
  repo = await newRepo({ 'a.txt': 'one\n', 'notes.txt': 'mine\n', '.gitignore': '.design/\n' });
  worktrees = await mkdtemp(path.join(os.tmpdir(), 'foreman-worktrees-'));
  cleanups.push(() => rm(worktrees, { recursive: true, force: true }));
  await mkdir(path.join(repo.dir, '.design'));
  out = [];
  errs = [];
});

describe('plan land', () => {
  it("lands the integration ref on the branch, leaving the person's other changes alone", async () => {
    writePlan(plan([task('edit a', 'a.txt', { status: 'completed' }), task('later', 'c.txt')]));
    const tip = await integrate({ 'a.txt': 'two\n', 'b.txt': 'new\n' });
    // The person's own work in progress: an unrelated edit, a staged change, an untracked file.
    writeFileSync(path.join(repo.dir, 'notes.txt'), 'mine, edited\n');
    await repo.write({ 'staged.txt': 'staged\n', 'untracked.txt': 'u\n' });
    await git('add', 'staged.txt');

    expect(await run('land')).toBe(0);
    expect(errs).toEqual([]);
    expect(out).toEqual([`landed 2 files on main (${tip.slice(0, 12)}): a.txt, b.txt`]);
    expect(await git('rev-parse', 'HEAD')).toBe(tip);
    expect(read('a.txt')).toBe('two\n');
    expect(read('b.txt')).toBe('new\n');
    expect(read('notes.txt')).toBe('mine, edited\n');
    expect(await git('status', '--porcelain')).toBe([' M notes.txt', 'A  staged.txt', '?? untracked.txt'].join('\n'));
    // An unfinished plan keeps its ref and stays where it is.
    expect(await refExists(REF)).toBe(true);
    expect(existsSync(planPath())).toBe(true);

    out = [];
    expect(await run('land')).toBe(0);
    expect(out).toEqual([`nothing new to land: main holds everything on ${REF} (${tip.slice(0, 12)})`]);
  });

  it("is blocked (exit 1) by a change of the person's to a file it would update, and touches nothing", async () => {
    writePlan(plan([task('edit a', 'a.txt', { status: 'completed' })]));
    await integrate({ 'a.txt': 'two\n', 'b.txt': 'new\n' });
    const head = await git('rev-parse', 'HEAD');
    writeFileSync(path.join(repo.dir, 'a.txt'), 'my edit\n');

    expect(await run('land')).toBe(1);
    expect(errs).toEqual([
      'not landed: a file it would update has local changes: a.txt (modified)',
      `commit, stash or undo them, then land it with \`npx tsx scripts/plan.ts land\`, or by hand with \`git merge --ff-only ${REF}\``,
    ]);
    expect(read('a.txt')).toBe('my edit\n');
    expect(existsSync(path.join(repo.dir, 'b.txt'))).toBe(false);
    expect(await git('rev-parse', 'HEAD')).toBe(head);
    expect(await git('status', '--porcelain')).toBe(' M a.txt');
    // Finished, but not landed: nothing is cleaned up.
    expect(await refExists(REF)).toBe(true);
    expect(existsSync(planPath())).toBe(true);
  });

  it('says so in JSON, landed or blocked', async () => {
    writePlan(plan([task('edit a', 'a.txt')]));
    const tip = await integrate({ 'b.txt': 'new\n' });
    writeFileSync(path.join(repo.dir, 'b.txt'), 'in the way\n');
    expect(await run('land', '--json')).toBe(1);
    expect(JSON.parse(out[0]!)).toMatchObject({
      planId: PLAN_ID,
      ref: REF,
      landed: false,
      problem: { kind: 'local-changes', lines: [expect.stringContaining('b.txt (untracked)'), expect.any(String)] },
    });
    expect(read('b.txt')).toBe('in the way\n');

    await rm(path.join(repo.dir, 'b.txt'));
    out = [];
    expect(await run('land', '--json')).toBe(0);
    expect(JSON.parse(out[0]!)).toEqual({
      plan: planPath(),
      planId: PLAN_ID,
      ref: REF,
      archived: false,
      resumed: null,
      landed: true,
      mode: 'commit',
      branch: 'main',
      upToDate: false,
      commit: tip,
      files: ['b.txt'],
      cleanedUp: false,
      archivedTo: null,
      problem: null,
    });
  });

  it('--no-commit lands in the files only, then only what is new since', async () => {
    writePlan(plan([task('edit a', 'a.txt'), task('b', 'b.txt')]));
    const head = await git('rev-parse', 'HEAD');
    const first = await integrate({ 'a.txt': 'two\n' });
    expect(await run('land', '--no-commit')).toBe(0);
    expect(out).toEqual([`landed 1 file on your files, uncommitted (${first.slice(0, 12)}): a.txt`]);
    expect(await git('rev-parse', 'HEAD')).toBe(head);
    expect(await git('status', '--porcelain')).toBe(' M a.txt');
    expect(JSON.parse(readFileSync(path.join(repo.dir, '.design', 'landed.json'), 'utf8'))).toEqual({ planId: PLAN_ID, commit: first });

    // More work integrated: a.txt, landed before and uncommitted, is not the person's change.
    const second = await integrate({ 'b.txt': 'bee\n' });
    out = [];
    expect(await run('land', '--no-commit')).toBe(0);
    expect(out).toEqual([`landed 1 file on your files, uncommitted (${second.slice(0, 12)}): b.txt`]);
    expect(read('a.txt')).toBe('two\n');
    expect(read('b.txt')).toBe('bee\n');
    expect(await git('rev-parse', 'HEAD')).toBe(head);
  });

  it('completes a landing a crash cut short before landing the rest', async () => {
    writePlan(plan([task('edit a', 'a.txt')]));
    const head = await git('rev-parse', 'HEAD');
    const tip = await integrate({ 'a.txt': 'two\n' });
    // A crash after the intent was recorded and the file written, before the ref moved.
    writeFileSync(
      path.join(repo.dir, '.design', 'landing.json'),
      JSON.stringify({ version: 1, mode: 'commit', branch: 'refs/heads/main', from: head, to: tip, paths: ['a.txt'] }),
    );
    writeFileSync(path.join(repo.dir, 'a.txt'), 'two\n');
    expect(await run('land')).toBe(0);
    // Worded as a run words it (run/lifecycle.ts landingNotice).
    expect(out[0]).toBe(`completed a landing an earlier run started: landed 1 file (${tip.slice(0, 12)})`);
    expect(await git('rev-parse', 'HEAD')).toBe(tip);
    expect(existsSync(path.join(repo.dir, '.design', 'landing.json'))).toBe(false);
    expect(await git('status', '--porcelain')).toBe('');
  });

  it('cleans up a finished plan once it landed: refs and worktrees removed, the plan archived', async () => {
    writePlan(plan([task('edit a', 'a.txt', { status: 'completed' })]));
    const tip = await integrate({ 'a.txt': 'two\n' });
    const slot = await poolSlot(PLAN_ID);
    expect(await run('land')).toBe(0);
    expect(await git('rev-parse', 'HEAD')).toBe(tip);
    expect(await refExists(REF)).toBe(false);
    expect(existsSync(slot)).toBe(false);
    expect(await git('worktree', 'list', '--porcelain')).not.toContain(slot);
    expect(existsSync(planPath())).toBe(false);
    expect(readdirSync(path.join(repo.dir, '.design', 'history'))).toHaveLength(1);
    expect(out[1]).toMatch(/^the plan is finished: its worktrees and refs were removed, and the plan was moved to .*history\/\d{8}T\d{6}Z-plan\.json$/);
  });

  it('a finished plan whose refs git cannot remove lands, stays, says why and how to finish it (exit 4); the next land finishes it', async () => {
    writePlan(plan([task('edit a', 'a.txt', { status: 'completed' })]));
    const tip = await integrate({ 'a.txt': 'two\n' });
    await git('update-ref', `refs/foreman-aside/${PLAN_ID}/0`, tip);
    // Someone else's git holds the lock of a ref of the plan's.
    const lock = path.join(repo.dir, '.git', 'refs', 'foreman-aside', PLAN_ID, '0.lock');
    writeFileSync(lock, '');
    expect(await run('land')).toBe(4);
    expect(await git('rev-parse', 'HEAD')).toBe(tip);
    expect(out).toEqual([`landed 1 file on main (${tip.slice(0, 12)}): a.txt`]);
    expect(errs).toEqual([
      expect.stringMatching(
        /^every task is completed and landed, but git could not remove the plan's refs \(git update-ref failed \(exit 1\): .*File exists.*\), so the plan was not archived: once git works, `[^`]* land --plan [^`]*plan\.json` finishes it$/,
      ),
    ]);
    expect(existsSync(planPath())).toBe(true);
    expect(await refExists(REF)).toBe(true);
    await rm(lock);
    out = [];
    expect(await run('land')).toBe(0);
    expect(out[1]).toMatch(/^the plan is finished: its worktrees and refs were removed, and the plan was moved to /);
    expect(await refExists(REF)).toBe(false);
  });

  it('finds the archived plan whose landing was blocked, and lands it', async () => {
    await mkdir(path.join(repo.dir, '.design', 'history'));
    const archived = path.join(repo.dir, '.design', 'history', '20250101T000000Z-plan.json');
    writePlan(plan([task('edit a', 'a.txt', { status: 'completed' })]), archived);
    writePlan(
      { ...plan([task('older', 'a.txt', { status: 'completed' })], 'older-plan') },
      path.join(repo.dir, '.design', 'history', '20240101T000000Z-plan.json'),
    );
    const tip = await integrate({ 'a.txt': 'two\n' });
    expect(await run('land')).toBe(0);
    expect(out[0]).toBe(`landing the archived plan ${archived} (isolate)`);
    expect(out[1]).toBe(`landed 1 file on main (${tip.slice(0, 12)}): a.txt`);
    expect(out[2]).toBe('the plan is finished: its worktrees and refs were removed');
    expect(await refExists(REF)).toBe(false);
    expect(existsSync(archived)).toBe(true);
  });

  it('refuses with exit 2 when there is nothing to land, and exit 3 while a run holds the lock', async () => {
    expect(await run('land')).toBe(2);
    expect(errs.join('\n')).toContain('no plan at');

    writePlan(plan([task('edit a', 'a.txt')], null));
    errs = [];
    expect(await run('land')).toBe(2);
    expect(errs.join('\n')).toContain('has no planId: it has never run');

    writePlan(plan([task('edit a', 'a.txt')]));
    errs = [];
    expect(await run('land')).toBe(2);
    expect(errs.join('\n')).toContain(`nothing to land: ${REF} does not exist`);

    await integrate({ 'a.txt': 'two\n' });
    const lock = await acquireLock(planPath(), currentLockInfo('a run'));
    if (!lock.ok) throw new Error('lock');
    try {
      errs = [];
      expect(await run('land')).toBe(3);
      expect(errs.join('\n')).toMatch(/^land: a run \(pid \d+ on host .*\) holds the lock/);
      expect(read('a.txt')).toBe('one\n');
    } finally {
      await lock.value.release();
    }
  });
});

describe('plan clean', () => {
  it("removes the plan's worktrees and keeps a ref holding work not landed", async () => {
    writePlan(plan([task('edit a', 'a.txt', { status: 'completed' }), task('b', 'b.txt')]));
    await integrate({ 'a.txt': 'two\n' });
    const slots = [await poolSlot(PLAN_ID, 0), await poolSlot(PLAN_ID, 1)];
    expect(await run('clean')).toBe(0);
    expect(out[0]).toMatch(new RegExp(`^the plan: removed 2 worktrees \\(\\d+(\\.\\d)? KB\\) from ${poolDir(worktrees, repo.dir, PLAN_ID)}$`));
    expect(out[1]).toBe(
      `  kept ${REF}: it holds 1 commit not on your branch; land it with \`npx tsx scripts/plan.ts land\`, or by hand with \`git merge --ff-only ${REF}\``,
    );
    for (const slot of slots) expect(existsSync(slot)).toBe(false);
    expect(await git('worktree', 'list', '--porcelain')).not.toContain(worktrees);
    expect(await refExists(REF)).toBe(true);
    expect(read('a.txt')).toBe('one\n');
  });

  it("removes archived plans' worktrees, deleting their refs only when landed", async () => {
    writePlan(plan([task('current', 'c.txt')], 'current'));
    await mkdir(path.join(repo.dir, '.design', 'history'));
    writePlan(plan([task('landed', 'a.txt', { status: 'completed' })], 'landed-plan'), path.join(repo.dir, '.design', 'history', '20250101T000000Z-plan.json'));
    writePlan(
      plan([task('unlanded', 'a.txt', { status: 'completed' })], 'unlanded-plan'),
      path.join(repo.dir, '.design', 'history', '20250102T000000Z-plan.json'),
    );
    await git('update-ref', 'refs/foreman/landed-plan', 'HEAD');
    await git('update-ref', 'refs/foreman/unlanded-plan', await commitOn({ 'a.txt': 'x\n' }));
    await git('update-ref', 'refs/foreman-awaiting/unlanded-plan/0', await commitOn({ 'z.txt': 'z\n' }));
    const landedSlot = await poolSlot('landed-plan');
    const unlandedSlot = await poolSlot('unlanded-plan');

    expect(await run('clean', '--json')).toBe(0);
    const { plans } = JSON.parse(out[0]!) as { plans: Array<{ planId: string; worktrees: number; deletedRefs: string[]; keptRefs: unknown[] }> };
    expect(plans.map((p) => [p.planId, p.worktrees, p.deletedRefs, p.keptRefs])).toEqual([
      ['current', 0, [], []],
      [
        'unlanded-plan',
        1,
        [],
        [
          { ref: 'refs/foreman-awaiting/unlanded-plan/0', kind: 'awaiting', commits: null },
          { ref: 'refs/foreman/unlanded-plan', kind: 'integration', commits: 1 },
        ],
      ],
      ['landed-plan', 1, ['refs/foreman/landed-plan'], []],
    ]);
    expect(existsSync(landedSlot)).toBe(false);
    expect(existsSync(unlandedSlot)).toBe(false);
    expect(await refExists('refs/foreman/landed-plan')).toBe(false);
    expect(await refExists('refs/foreman/unlanded-plan')).toBe(true);
    expect(await refExists('refs/foreman-awaiting/unlanded-plan/0')).toBe(true);
  });

  it('refuses (exit 3) while a run holds the lock, removing nothing; exit 2 outside a repository', async () => {
    writePlan(plan([task('a', 'a.txt')]));
    const slot = await poolSlot(PLAN_ID);
    const lock = await acquireLock(planPath(), currentLockInfo('a run'));
    if (!lock.ok) throw new Error('lock');
    try {
      expect(await run('clean')).toBe(3);
      expect(errs.join('\n')).toMatch(/^clean: a run \(pid \d+/);
      expect(existsSync(slot)).toBe(true);
    } finally {
      await lock.value.release();
    }
    const outside = await mkdtemp(path.join(os.tmpdir(), 'foreman-no-repo-'));
    cleanups.push(() => rm(outside, { recursive: true, force: true }));
    await mkdir(path.join(outside, '.design'));
    writePlan(plan([task('a', 'a.txt')]), path.join(outside, '.design', 'plan.json'));
    errs = [];
    expect(await run('clean', '--plan', path.join(outside, '.design', 'plan.json'))).toBe(2);
    expect(errs).toEqual([`clean: ${path.join(outside, '.design', 'plan.json')} is not in a git repository`]);
  });
});

describe('plan status: worktrees and integrated work', () => {
  it('shows the worktrees with their disk use and the commits not landed, in text and JSON', async () => {
    writePlan(plan([task('a', 'a.txt', { status: 'completed' }), task('b', 'b.txt', { status: 'awaiting_approval' })]));
    await integrate({ 'a.txt': 'two\n' });
    await integrate({ 'a.txt': 'three\n' });
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/1`, await commitOn({ 'b.txt': 'b\n' }));
    await poolSlot(PLAN_ID);
    expect(await run('status')).toBe(0);
    const dir = poolDir(worktrees, repo.dir, PLAN_ID);
    expect(out).toContainEqual(
      expect.stringMatching(new RegExp(`^Worktrees: 1 \\(\\d+(\\.\\d)? KB\\) in ${dir}; \`npx tsx scripts/plan.ts clean\` removes them$`)),
    );
    expect(out).toContainEqual(`Integrated work: 2 commits on ${REF} not on your branch yet; \`npx tsx scripts/plan.ts land\` lands them`);
    expect(out).toContainEqual(
      'Awaiting approval, parked: task 1 (`npx tsx scripts/plan.ts approve N`, `npx tsx scripts/plan.ts revise N --feedback …` or `npx tsx scripts/plan.ts reject N --reason …`)',
    );

    out = [];
    expect(await run('status', '--json')).toBe(0);
    const { isolation } = JSON.parse(out[0]!) as {
      isolation: { worktrees: { count: number; bytes: number; dir: string }; ref: { name: string; notLanded: number }; parked: number[] };
    };
    expect(isolation.worktrees).toMatchObject({ count: 1, dir });
    expect(isolation.worktrees.bytes).toBeGreaterThanOrEqual(64 * 1024);
    expect(isolation.ref).toMatchObject({ name: REF, notLanded: 2 });
    expect(isolation.parked).toEqual([1]);

    expect(await run('land')).toBe(0);
    await run('clean');
    out = [];
    expect(await run('status')).toBe(0);
    expect(out).toContainEqual('Worktrees: none');
    expect(out).toContainEqual(expect.stringMatching(new RegExp(`^Integrated work: all on your branch \\(${REF} at [0-9a-f]{12}\\)$`)));
  });

  it('has no isolation lines for a plan that never ran', async () => {
    writePlan(plan([task('a', 'a.txt')], null));
    expect(await run('status', '--json')).toBe(0);
    expect(JSON.parse(out[0]!).isolation).toBeNull();
  });
});

describe('plan approve and reject with parked work', () => {
  const awaitingApproval = (extra: Partial<Task> = {}) =>
    task('gate', 'g.txt', { status: 'awaiting_approval', gate: 'human-approval', attempts: 1, result: 'please look', ...extra });

  it('approve integrates the parked work (the ref made at HEAD), records the commit, drops the parked ref and lands', async () => {
    writePlan(plan([awaitingApproval(), task('after', 'h.txt', { blockedBy: [0] })]));
    const parkedRef = `refs/foreman-awaiting/${PLAN_ID}/0`;
    await git('update-ref', parkedRef, await commitOn({ 'g.txt': 'gated\n' }));
    expect(await refExists(REF)).toBe(false);

    expect(await run('approve', '0')).toBe(0);
    const recorded = readPlan().tasks[0]!;
    expect(recorded.status).toBe('completed');
    const commit = recorded.commit as string;
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(out).toEqual([
      `task 0 (gate): awaiting_approval → completed — approved; its work was integrated (${commit.slice(0, 12)})`,
      `landed 1 file on main (${commit.slice(0, 12)}): g.txt`,
    ]);
    expect(await git('rev-parse', 'HEAD')).toBe(commit);
    expect(await git('rev-parse', REF)).toBe(commit);
    expect(read('g.txt')).toBe('gated\n');
    expect(await refExists(parkedRef)).toBe(false);
    // Its trailers name the task, so a resume knows it is integrated.
    expect(await git('log', '-1', '--format=%(trailers:key=Foreman-Tasks,valueonly)', commit)).toBe('0');
  });

  it("approve: a blocked landing exits 1 with the work integrated and the person's file untouched", async () => {
    writePlan(plan([awaitingApproval(), task('after', 'h.txt', { blockedBy: [0] })]));
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/0`, await commitOn({ 'g.txt': 'gated\n' }));
    writeFileSync(path.join(repo.dir, 'g.txt'), 'my own g\n');
    const head = await git('rev-parse', 'HEAD');
    expect(await run('approve', '0')).toBe(1);
    expect(errs[0]).toBe('not landed: a file it would update has local changes: g.txt (untracked)');
    expect(read('g.txt')).toBe('my own g\n');
    expect(await git('rev-parse', 'HEAD')).toBe(head);
    expect(readPlan().tasks[0]).toMatchObject({ status: 'completed', commit: await git('rev-parse', REF) });
  });

  it('approve refuses (exit 2) work that conflicts with integrated work, changing nothing', async () => {
    writePlan(plan([awaitingApproval()]));
    const base = await git('rev-parse', 'HEAD');
    await integrate({ 'g.txt': 'someone else\n' });
    const tip = await git('rev-parse', REF);
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/0`, await commitOn({ 'g.txt': 'gated\n' }, base));
    const before = readFileSync(planPath(), 'utf8');
    expect(await run('approve', '0')).toBe(2);
    expect(errs).toEqual([
      `approve: task 0's approved work changes g.txt, which integrated work changed after its attempt started: reject it (\`npx tsx scripts/plan.ts reject 0 --reason …\`) and retry the task (\`npx tsx scripts/plan.ts retry 0\`); task 0 is still awaiting approval`,
    ]);
    expect(readFileSync(planPath(), 'utf8')).toBe(before);
    expect(await git('rev-parse', REF)).toBe(tip);
    expect(await refExists(`refs/foreman-awaiting/${PLAN_ID}/0`)).toBe(true);
  });

  it('approve without parked work keeps the old behaviour', async () => {
    writePlan(plan([awaitingApproval()]));
    expect(await run('approve', '0')).toBe(0);
    expect(out).toEqual(['task 0 (gate): awaiting_approval → completed — approved; the next run commits its work']);
    expect(await refExists(REF)).toBe(false);
  });

  it('reject drops the parked work', async () => {
    writePlan(plan([awaitingApproval(), task('after', 'h.txt', { blockedBy: [0] })]));
    const parkedRef = `refs/foreman-awaiting/${PLAN_ID}/0`;
    await git('update-ref', parkedRef, await commitOn({ 'g.txt': 'gated\n' }));
    expect(await run('reject', '0', '--reason', 'not like this')).toBe(0);
    expect(out).toEqual([
      'task 0 (gate): awaiting_approval → failed — rejected: not like this',
      'task 1 (after): pending → skipped — depends on task 0',
      `dropped its parked work (${parkedRef})`,
    ]);
    expect(await refExists(parkedRef)).toBe(false);
    expect(existsSync(path.join(repo.dir, 'g.txt'))).toBe(false);
  });

  it('approve 0 1 integrates both parked works in one commit, records it on each and lands', async () => {
    writePlan(
      plan([
        awaitingApproval(),
        task('second gate', 'k.txt', { status: 'awaiting_approval', gate: 'human-approval', attempts: 1 }),
        task('after', 'h.txt', { blockedBy: [0, 1] }),
      ]),
    );
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/0`, await commitOn({ 'g.txt': 'gated\n' }));
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/1`, await commitOn({ 'k.txt': 'kept\n' }));
    expect(await run('approve', '0', '1')).toBe(0);
    const tasks = readPlan().tasks;
    const commit = tasks[0]!.commit as string;
    expect(tasks[1]!.commit).toBe(commit);
    expect(out).toEqual([
      `task 0 (gate): awaiting_approval → completed — approved; its work was integrated (${commit.slice(0, 12)})`,
      `task 1 (second gate): awaiting_approval → completed — approved; its work was integrated (${commit.slice(0, 12)})`,
      `landed 2 files on main (${commit.slice(0, 12)}): g.txt, k.txt`,
    ]);
    expect(await git('log', '-1', '--format=%(trailers:key=Foreman-Tasks,valueonly)', commit)).toBe('0,1');
    expect(read('g.txt')).toBe('gated\n');
    expect(read('k.txt')).toBe('kept\n');
    for (const i of [0, 1]) expect(await refExists(`refs/foreman-awaiting/${PLAN_ID}/${i}`)).toBe(false);
  });

  it('approve 0 1 refuses both (exit 2) when one conflicts with integrated work, changing nothing', async () => {
    writePlan(plan([awaitingApproval(), task('second gate', 'k.txt', { status: 'awaiting_approval', gate: 'human-approval', attempts: 1 })]));
    const base = await git('rev-parse', 'HEAD');
    await integrate({ 'g.txt': 'someone else\n' });
    const tip = await git('rev-parse', REF);
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/0`, await commitOn({ 'g.txt': 'gated\n' }, base));
    await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/1`, await commitOn({ 'k.txt': 'kept\n' }, base));
    const before = readFileSync(planPath(), 'utf8');
    expect(await run('approve', '0', '1')).toBe(2);
    expect(errs).toEqual([
      'approve: the approved work of tasks 0 and 1 changes g.txt, which integrated work changed after their attempts started or more than one of them changes: approve them one at a time to find which, then reject it (`npx tsx scripts/plan.ts reject N --reason …`) and retry it (`npx tsx scripts/plan.ts retry N`); tasks 0 and 1 are still awaiting approval',
    ]);
    expect(readFileSync(planPath(), 'utf8')).toBe(before);
    expect(await git('rev-parse', REF)).toBe(tip);
    for (const i of [0, 1]) expect(await refExists(`refs/foreman-awaiting/${PLAN_ID}/${i}`)).toBe(true);
  });

  it('approve 0 1 with a test command records both approvals for the next run to gate, integrating nothing now', async () => {
    writePlan({
      ...plan([awaitingApproval(), task('second gate', 'k.txt', { status: 'awaiting_approval', gate: 'human-approval', attempts: 1 })]),
      context: { testCommand: 'true' },
    });
    for (const i of [0, 1]) await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/${i}`, await commitOn({ [`${i}.txt`]: 'x\n' }));
    expect(await run('approve', '0', '1')).toBe(0);
    expect(out).toEqual([
      'task 0 (gate): awaiting_approval → completed — approved; the next run tests its work with the gate (`true`) and integrates it',
      'task 1 (second gate): awaiting_approval → completed — approved; the next run tests its work with the gate (`true`) and integrates it',
    ]);
    expect(await refExists(REF)).toBe(false);
  });

  it('reject 0 1 drops both parked works', async () => {
    writePlan(plan([awaitingApproval(), task('second gate', 'k.txt', { status: 'awaiting_approval', gate: 'human-approval', attempts: 1 })]));
    for (const i of [0, 1]) await git('update-ref', `refs/foreman-awaiting/${PLAN_ID}/${i}`, await commitOn({ [`${i}.txt`]: 'x\n' }));
    expect(await run('reject', '0', '1', '--reason', 'no')).toBe(0);
    expect(out.slice(-2)).toEqual([
      `dropped task 0's parked work (refs/foreman-awaiting/${PLAN_ID}/0)`,
      `dropped task 1's parked work (refs/foreman-awaiting/${PLAN_ID}/1)`,
    ]);
    for (const i of [0, 1]) expect(await refExists(`refs/foreman-awaiting/${PLAN_ID}/${i}`)).toBe(false);
  });
});
