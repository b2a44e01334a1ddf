// One set of refusals before the work: every refusal `execute` makes before it starts a worker,
// set up in a real temporary git repository, against what `execute --dry-run`, `plan check` and
// `plan setup` and `plan probe` say of the same situation — the same exit code and the same first
// line. A column marked not applicable says why that command cannot know it (or says it as its
// own finding). The dry run, the check and a refused probe write nothing. Commands run in this process (test/support/execute.ts), but for the
// sandbox's row: its support is asked once per process, with that process's PATH.

import { existsSync } from 'node:fs';
import { type FileHandle, mkdir, mkdtemp, open, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processStartTime } from '../../src/adapters/processes/processes.ts';
import { EXIT, type ExitCode } from '../../src/cli/exit.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { committedContradictions } from '../../src/run/refusals.ts';
import { type ExecuteRun, runExecute, runExecuteProcess, runPlanTool, runPlanToolProcess } from '../support/execute.ts';
import { runGit, tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { fakeTask, makePlan, writePlan } from '../support/plans.ts';
import { expectSchema } from '../skills/support.ts';

/** What a row makes: the folder the commands run in, and what each command is given besides. */
interface Situation {
  dir: string;
  /** Arguments of `execute` (and of its dry run). */
  args?: string[];
  /** Arguments of `plan setup`. */
  setupArgs?: string[];
  env?: Record<string, string>;
}

/** A command that cannot know the refusal, and why. */
type Column = 'applies' | { notApplicable: string };

interface Row {
  refusal: string;
  code: ExitCode;
  /** What `execute`'s first line says; every command that applies says exactly that line. */
  line: RegExp;
  arrange(): Promise<Situation>;
  /** Each command's column: it applies unless marked. */
  dryRun?: Column;
  check?: Column;
  setup?: Column;
  probe?: Column;
  /** Run each command as a process of its own. */
  processes?: boolean;
  /** Refused after setup gave the plan its id (it ran the plan's commands): `execute` and `plan setup` wrote the plan by then. */
  afterPlanId?: true;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function repoWith(plan: Plan, files: Record<string, string> = { 'README.md': 'hello\n' }, unborn = false): Promise<TempGitRepo> {
  const repo = await tempGitRepo(files, { unborn });
  cleanups.push(repo.cleanup);
  await writePlan(repo.dir, plan);
  return repo;
}

async function scratch(prefix: string): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const oneTask = (spec: Parameters<typeof fakeTask>[1] = { create: ['a.txt'] }) => makePlan([fakeTask('A', spec)]);

// Each row's reason for a command that cannot know the refusal.
const MOMENT = "the repository's state of the moment, not the plan's or its last commit's: plan check judges the plan, and may run beside a run or mid-rebase";
const MACHINE = "this machine's Claude Code CLI: only a headless run starts it (a session's workers are the session's own subagents)";
const RUNS_COMMANDS = "found by running the plan's commands, which neither the dry run nor plan check runs (plan probe runs the checks)";
const NOT_IN_SESSION_PROBE = 'a session does not probe at setup: its lead runs plan probe';
const OWN_CHECKOUT =
  "the repository's state of the moment: plan probe works in a checkout of its own of the last commit, which a merge in progress or a held index does not touch";
const PROBE_FINDS = "plan probe reports it as its finding (exit 1), which is what it runs for; a run's own probe refuses it";

const ROWS: Row[] = [
  {
    refusal: 'an invalid plan',
    code: EXIT.invalid,
    line: /plan\.json: the plan is invalid \(1 problem\):$/,
    arrange: async () => {
      const plan = oneTask();
      plan.tasks[0]!.blockedBy = [3];
      return { dir: (await repoWith(plan)).dir };
    },
  },
  {
    refusal: 'not in a git repository',
    code: EXIT.invalid,
    line: /is not in a git repository \(foreman commits each round; run `git init` first\)$/,
    arrange: async () => {
      const dir = await scratch('foreman-norepo-');
      await writePlan(dir, oneTask());
      return { dir };
    },
    // Outside any repository plan check checks the plan alone (exit 0), as documented.
    check: { notApplicable: 'outside any repository plan check checks the plan alone' },
    probe: {
      notApplicable: "plan probe names the plan's folder, not a --repo, and says why it needs a repository: it checks out the last commit (exit 2 too)",
    },
  },
  {
    refusal: 'a repository with no commit',
    code: EXIT.invalid,
    line: /^the repository at .* has no commit yet, and foreman works from the last commit: commit something first \(e\.g\. `git add -A && git commit -m "Initial commit"`\), then run again$/,
    arrange: async () => ({ dir: (await repoWith(oneTask(), { 'README.md': 'hello\n' }, true)).dir }),
  },
  {
    refusal: 'a directory declared as a file',
    code: EXIT.invalid,
    line: /^tasks\[0\]: "test" is a directory; declare it as "test\/" to mean everything under it$/,
    arrange: async () => ({ dir: (await repoWith(oneTask({ create: ['test'] }), { 'test/a.test.js': 'ok\n' })).dir }),
  },
  {
    refusal: 'a directory of the last commit declared as a file (gone from the working tree)',
    code: EXIT.invalid,
    line: /^tasks\[0\]: "lib" is a directory in the last commit; declare it as "lib\/" to mean everything under it$/,
    arrange: async () => {
      const repo = await repoWith(oneTask({ modify: ['lib'] }), { 'lib/x.js': 'x\n' });
      // Deleted, not committed: the workers start from the commit, which has it.
      await rm(join(repo.dir, 'lib'), { recursive: true });
      return { dir: repo.dir };
    },
  },
  {
    refusal: 'a declared path under a file of the last commit',
    code: EXIT.invalid,
    line: /^tasks\[0\]: "README\.md\/notes\.txt" cannot exist: "README\.md" is a file in the last commit$/,
    arrange: async () => ({ dir: (await repoWith(oneTask({ create: ['README.md/notes.txt'] }))).dir }),
  },
  {
    refusal: 'a file of the last commit declared as a directory',
    code: EXIT.invalid,
    line: /^tasks\[0\]: "README\.md\/" is a file in the last commit; declare it as "README\.md"$/,
    arrange: async () => ({ dir: (await repoWith(oneTask({ modify: ['README.md/'] }))).dir }),
  },
  {
    refusal: 'a declared path through a symlink out of the repository',
    code: EXIT.invalid,
    line: /^tasks\[0\]: "out\/a\.txt" resolves outside the repository \(through a symlink to .*\)$/,
    arrange: async () => {
      const repo = await repoWith(oneTask({ create: ['out/a.txt'] }));
      await symlink(await scratch('foreman-outside-'), join(repo.dir, 'out'));
      return { dir: repo.dir };
    },
  },
  {
    refusal: 'a declared path git ignores',
    code: EXIT.invalid,
    line: /^tasks\[0\]: "dist\/app\.js" is ignored by git \(\.gitignore:1:dist\/\)/,
    arrange: async () => ({ dir: (await repoWith(oneTask({ create: ['dist/app.js'] }), { '.gitignore': 'dist/\n' })).dir }),
  },
  {
    refusal: 'a cherry-pick in progress',
    code: EXIT.invalid,
    line: /^the repository is in the middle of a cherry-pick: finish or abort it first/,
    arrange: async () => {
      const repo = await repoWith(oneTask());
      await writeFile(join(repo.dir, '.git/CHERRY_PICK_HEAD'), await repo.git(['rev-parse', 'HEAD']));
      return { dir: repo.dir };
    },
    check: { notApplicable: MOMENT },
    probe: { notApplicable: OWN_CHECKOUT },
  },
  {
    refusal: 'the index locked by a live git process',
    code: EXIT.cannotRun,
    line: /^another git process is using this repository \(\.git\/index\.lock is held open\); wait for it to finish and run again$/,
    arrange: async () => {
      const repo = await repoWith(oneTask());
      // This process holds it open, as a git process at work would.
      const held: FileHandle = await open(join(repo.dir, '.git/index.lock'), 'w');
      cleanups.push(() => held.close());
      return { dir: repo.dir };
    },
    check: { notApplicable: MOMENT },
    probe: { notApplicable: OWN_CHECKOUT },
  },
  {
    refusal: "another run holding the plan's lock",
    code: EXIT.cannotRun,
    line: new RegExp(
      `^a run \\(pid ${process.pid} on host ${hostname()}, started 2026-11-22T01:02:03\\.000Z\\) holds the lock; stop it first or wait; watch it with \`.*plan.* status\`$`,
    ),
    arrange: async () => {
      const repo = await repoWith(oneTask());
      // A live holder: this process.
      const lock = {
        pid: process.pid,
        host: hostname(),
        startedAt: '2026-11-22T01:02:03.000Z',
        command: 'execute',
        processStart: processStartTime(process.pid),
      };
      await writeFile(join(repo.dir, '.design/plan.lock'), `${JSON.stringify(lock)}\n`);
      return { dir: repo.dir };
    },
    check: { notApplicable: 'a run of the moment: plan check only reads the plan, and runs beside a run' },
  },
  {
    refusal: 'the Claude Code CLI not found',
    code: EXIT.cannotRun,
    line: /^the Claude Code CLI "\/nonexistent\/claude" was not found\./,
    arrange: async () => ({ dir: (await repoWith(oneTask())).dir, args: ['--claude-bin', '/nonexistent/claude'] }),
    check: { notApplicable: MACHINE },
    setup: { notApplicable: MACHINE },
    probe: { notApplicable: MACHINE },
  },
  {
    refusal: 'the Claude Code CLI not logged in',
    code: EXIT.cannotRun,
    line: /is not logged in, so no worker could run; nothing was started/,
    arrange: async () => ({ dir: (await repoWith(oneTask())).dir, env: { FAKE_WORKER_AUTH: 'none' } }),
    check: { notApplicable: MACHINE },
    setup: { notApplicable: MACHINE },
    probe: { notApplicable: MACHINE },
  },
  {
    refusal: '--sandbox on where the sandbox cannot run',
    code: EXIT.cannotRun,
    line: /^--sandbox on: the sandbox cannot run here \(.*bwrap.*\)/,
    arrange: async () => {
      const repo = await repoWith(oneTask());
      // A PATH with node, git and sh only: no bubblewrap.
      const bin = await scratch('foreman-bin-');
      for (const tool of ['node', 'git', 'sh']) await symlink(`/usr/bin/${tool}`, join(bin, tool));
      return { dir: repo.dir, args: ['--sandbox', 'on'], setupArgs: ['--sandbox', 'on'], env: { PATH: bin } };
    },
    check: { notApplicable: "this machine's sandbox, not the plan's" },
    probe: { notApplicable: 'plan probe names itself in the line (`plan probe --sandbox on: …`, exit 3 too)' },
    processes: true,
  },
  {
    // A declared path no rule can express is refused by the plan's validation already (the first row).
    refusal: 'a repository path no permission rule can anchor',
    code: EXIT.invalid,
    line: /^these paths cannot be given to a worker as exact permission rules:$/,
    arrange: async () => {
      const dir = join(await scratch('foreman-rules-'), 'repo?');
      await runGit(dirname(dir), ['init', '-q', '-b', 'main', dir]);
      await writeFile(join(dir, 'README.md'), 'hello\n');
      await runGit(dir, ['add', 'README.md']);
      await runGit(dir, ['-c', 'user.name=T', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', 'commit', '-qm', 'initial']);
      await writePlan(dir, oneTask());
      return { dir };
    },
    check: { notApplicable: 'only a headless worker gets exact permission rules (--allowed-tools replaces them)' },
    setup: { notApplicable: "a session's subagents are held to their declared files by foreman's hook, not by permission rules" },
    probe: { notApplicable: 'only a headless worker gets exact permission rules; the probe starts no worker' },
  },
  {
    refusal: "the plan's setup command failing where the assumptions are checked",
    code: EXIT.cannotRun,
    line: /Fix the plan's context\.setupCommand \(or what it needs\) and run again; no attempt was spent\.$/,
    arrange: async () => {
      const plan = oneTask({ create: ['a.txt'], assumptions: [{ claim: 'node runs', verify: 'node --version', severity: 'blocking' }] });
      plan.context = { setupCommand: 'echo cannot install >&2; exit 1' };
      return { dir: (await repoWith(plan)).dir, args: ['--sandbox', 'off'], setupArgs: ['--sandbox', 'off'] };
    },
    dryRun: { notApplicable: RUNS_COMMANDS },
    afterPlanId: true,
    check: { notApplicable: RUNS_COMMANDS },
    probe: { notApplicable: PROBE_FINDS },
  },
  {
    refusal: 'an acceptance check that cannot run (the probe)',
    code: EXIT.invalid,
    line: /^1 acceptance check cannot run, so every attempt of its task would fail; nothing was started\./,
    arrange: async () => ({
      dir: (await repoWith(oneTask({ create: ['a.txt'], acceptance: [{ criterion: 'runs', check: 'no-such-command-here' }] }))).dir,
      args: ['--sandbox', 'off'],
    }),
    dryRun: { notApplicable: RUNS_COMMANDS },
    afterPlanId: true,
    check: { notApplicable: RUNS_COMMANDS },
    setup: { notApplicable: NOT_IN_SESSION_PROBE },
    probe: { notApplicable: PROBE_FINDS },
  },
  {
    refusal: 'the gate failing on the starting commit',
    code: EXIT.invalid,
    line: /^the gate `echo red >&2; exit 1` already fails on /,
    arrange: async () => {
      const plan = oneTask();
      plan.context = { testCommand: 'echo red >&2; exit 1' };
      return { dir: (await repoWith(plan)).dir, args: ['--sandbox', 'off'], setupArgs: ['--sandbox', 'off'] };
    },
    dryRun: { notApplicable: RUNS_COMMANDS },
    afterPlanId: true,
    check: { notApplicable: RUNS_COMMANDS },
    probe: { notApplicable: 'the gate, which plan probe does not run: it runs the acceptance checks' },
  },
];

const firstLine = (run: ExecuteRun): string => run.stderr.trim().split('\n')[0] ?? '';

/** What a dry run or a check must leave as it was: the plan file, and the repository's status, index and refs. */
async function stateOf(dir: string): Promise<string> {
  const plan = await readFile(join(dir, '.design/plan.json'), 'utf8');
  if (!existsSync(join(dir, '.git'))) return plan;
  const status = await runGit(dir, ['status', '--porcelain=v1', '-uall', '--ignored']).catch((e: Error) => e.message);
  const refs = await runGit(dir, ['for-each-ref']);
  const index = await runGit(dir, ['ls-files', '-s']);
  return [plan, status, refs, index].join('\n---\n');
}

describe('what execute refuses before its first worker, against the dry run, plan check, plan setup and plan probe', () => {
  it.each(ROWS.map((row) => [row.refusal, row] as const))('%s', async (_, row) => {
    const situation = await row.arrange();
    const { dir, args = [], setupArgs = [], env = {} } = situation;
    const execute = (argv: string[]) => (row.processes ? runExecuteProcess(dir, argv, env) : runExecute(dir, argv, env));
    const plan = (argv: string[]) => (row.processes ? runPlanToolProcess(dir, argv, env) : runPlanTool(dir, argv, env));

    const before = await stateOf(dir);
    const said: Record<string, { code: number | undefined; line: string }> = {};
    if ((row.dryRun ?? 'applies') === 'applies') {
      const dry = await execute(['--dry-run', ...args]);
      said['execute --dry-run'] = { code: dry.exitCode, line: firstLine(dry) };
      expect(dry.stdout, 'the dry run describes no run it refuses').toBe('');
    }
    if ((row.check ?? 'applies') === 'applies') {
      const check = await plan(['check']);
      said['plan check'] = { code: check.exitCode, line: firstLine(check) };
    }
    if ((row.probe ?? 'applies') === 'applies') {
      const probe = await plan(['probe']);
      said['plan probe'] = { code: probe.exitCode, line: firstLine(probe) };
      expect(probe.stdout, 'a refused probe reports nothing').toBe('');
    }
    // None wrote anything.
    expect(await stateOf(dir)).toBe(before);

    const planText = await readFile(join(dir, '.design/plan.json'), 'utf8');
    const run = await execute(args);
    const ran = { code: run.exitCode, line: firstLine(run) };
    // Refused before it gave the plan an id: the plan file is as it was.
    if (row.afterPlanId === undefined) expect(await readFile(join(dir, '.design/plan.json'), 'utf8')).toBe(planText);
    expect(ran.line, run.stderr).toMatch(row.line);
    expect(ran.code, run.stderr).toBe(row.code);
    if ((row.setup ?? 'applies') === 'applies') {
      const setup = await plan(['setup', ...setupArgs]);
      if (row.afterPlanId === undefined) expect(await readFile(join(dir, '.design/plan.json'), 'utf8')).toBe(planText);
      const answer = JSON.parse(setup.stdout) as { error?: { message: string } };
      await expectSchema('step-error', answer);
      const error = answer.error;
      said['plan setup'] = { code: setup.exitCode, line: error?.message ?? setup.stdout };
      // Its one line on stderr says the same, naming the step.
      expect(firstLine(setup).startsWith(`plan setup: ${error?.message}`), setup.stderr).toBe(true);
    }
    for (const [command, what] of Object.entries(said)) expect({ command, ...what }).toEqual({ command, ...ran });
  });

  it('every row names what it checks, and every column not applicable says why', () => {
    for (const row of ROWS)
      for (const column of [row.dryRun, row.check, row.setup, row.probe])
        if (column !== undefined && column !== 'applies') expect(column.notApplicable.length).toBeGreaterThan(20);
  });
});

describe('a repository with no commit', () => {
  it('is exit 2, "commit something first", for every plan command that needs a commit', async () => {
    const repo = await repoWith(oneTask(), { 'README.md': 'hello\n' }, true);
    const line = `the repository at ${repo.dir} has no commit yet, and foreman works from the last commit: commit something first (e.g. \`git add -A && git commit -m "Initial commit"\`), then run again`;
    const probe = await runPlanTool(repo.dir, ['probe']);
    expect({ code: probe.exitCode, stderr: probe.stderr }).toEqual({ code: EXIT.invalid, stderr: line });
    for (const command of ['land', 'clean']) {
      const r = await runPlanTool(repo.dir, [command]);
      expect({ code: r.exitCode, stderr: r.stderr }).toEqual({ code: EXIT.invalid, stderr: `${command}: ${line}` });
    }
    // Nothing was made: no worktree, no ref, the plan as written.
    expect(await runGit(repo.dir, ['for-each-ref'])).toBe('');
  });
});

describe('the dry run warns of uncommitted changes as the run does', () => {
  it('says the run’s own warning, in text and as a notice event with --json', async () => {
    const repo = await repoWith(oneTask({ create: ['a.txt'], modify: ['README.md'], fake: { write: { 'a.txt': 'a' } } }));
    await writeFile(join(repo.dir, 'README.md'), 'my own edit\n');
    const dry = await runExecute(repo.dir, ['--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    const warning = dry.stdout.split('\n').find((l) => l.startsWith('Warning: you have an uncommitted change (README.md)'));
    expect(warning, dry.stdout).toBeDefined();
    const json = await runExecute(repo.dir, ['--dry-run', '--json']);
    const notices = json.stdout
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; level?: string; message?: string })
      .filter((e) => e.type === 'notice');
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ level: 'warning', message: warning!.slice('Warning: '.length) });

    // The run says exactly that, as it starts.
    const run = await runExecute(repo.dir, ['--sandbox', 'off', '--no-probe']);
    expect(run.stdout).toContain(notices[0]!.message);
  });

  it('says nothing of a clean working tree, nor of the plan’s own folder', async () => {
    const repo = await repoWith(oneTask());
    await mkdir(join(repo.dir, '.design/notes'), { recursive: true });
    await writeFile(join(repo.dir, '.design/notes/x.md'), 'x\n');
    const dry = await runExecute(repo.dir, ['--dry-run']);
    expect(dry.exitCode, dry.stderr).toBe(0);
    expect(dry.stdout).not.toContain('uncommitted');
  });
});

describe('declared paths the last commit contradicts (committedContradictions)', () => {
  const committed = new Set(['README.md', 'src/app.ts', 'src/lib/util.ts', 'bin']);
  const planOf = (...specs: Array<Parameters<typeof fakeTask>[1]>) => makePlan(specs.map((spec, i) => fakeTask(String(i), spec)));

  it('names a bare path the commit holds as a directory, a path under one of its files, and a file declared as a directory', () => {
    const plan = planOf({ modify: ['src', 'src/lib/'] }, { create: ['README.md/notes.txt', 'bin/'] }, { create: ['new.ts'], reads: ['src/lib'] });
    expect(committedContradictions(plan, committed)).toEqual([
      'tasks[0]: "src" is a directory in the last commit; declare it as "src/" to mean everything under it',
      'tasks[1]: "README.md/notes.txt" cannot exist: "README.md" is a file in the last commit',
      'tasks[1]: "bin/" is a file in the last commit; declare it as "bin"',
      'tasks[2]: "src/lib" is a directory in the last commit; declare it as "src/lib/" to mean everything under it',
    ]);
  });

  it('says nothing of new paths, of paths declared as they are, nor of completed tasks', () => {
    const plan = planOf({ create: ['src/new/file.ts', 'docs/'], modify: ['src/app.ts', 'src/lib/'] }, { modify: ['src'] });
    plan.tasks[1]!.status = 'completed';
    expect(committedContradictions(plan, committed)).toEqual([]);
    expect(committedContradictions(planOf({ create: ['a.txt'] }), new Set())).toEqual([]);
  });
});
