// Helpers for the skill tests: the step commands' JSON checked against their schemas, the lead's
// loop played without a model (the fake worker reads each prompt file), and file trees compared.

import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { execa } from 'execa';
import { expect } from 'vitest';
import { runProcess } from '../../src/adapters/processes/spawner.ts';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { fakeWorker, repoRoot } from '../support/execute.ts';
import { leftovers } from '../support/fake-run.ts';
import { runGit, tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { writePlan } from '../support/plans.ts';

export const launcher = join(repoRoot, 'bin/foreman');

const ajv = new Ajv({ allErrors: true, strict: true });
const validators = new Map<string, ValidateFunction>();

/** The schema in schemas/<name>.schema.json, compiled once. */
export async function schemaFor(name: string): Promise<ValidateFunction> {
  let v = validators.get(name);
  if (!v) {
    v = ajv.compile(JSON.parse(await readFile(join(repoRoot, 'schemas', `${name}.schema.json`), 'utf8')));
    validators.set(name, v);
  }
  return v;
}

/** Assert that `value` follows schemas/<name>.schema.json. */
export async function expectSchema(name: string, value: unknown): Promise<void> {
  const validate = await schemaFor(name);
  const ok = validate(value);
  expect(ok, `${name}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 2000)}`).toBe(true);
}

const jsonOf = (stdout: string): any => {
  try {
    return JSON.parse(stdout);
  } catch {
    return undefined;
  }
};

export interface StepRun {
  code: number;
  json: any;
  stdout: string;
  stderr: string;
}

/** Run `plan.ts <argv>` in-process in `cwd`, with `extraEnv` besides the worktrees' place; stdout must be one JSON object. */
export async function step(cwd: string, argv: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<StepRun> {
  const out: string[] = [];
  const err: string[] = [];
  // Only where the plan's worktrees go (vitest.config.ts sets it): never in the real ~/.cache.
  const env = { FOREMAN_WORKTREES: process.env.FOREMAN_WORKTREES ?? join(tmpdir(), 'foreman-test-worktrees'), ...extraEnv };
  const io: Io = { out: (t) => out.push(t), err: (t) => err.push(t), cwd, env, isTTY: false, columns: 200 };
  const code = await runProgram('plan.ts', planCommands, argv, io);
  const stdout = out.join('\n');
  return { code, stdout, stderr: err.join('\n'), json: jsonOf(stdout) };
}

/** The same through the launcher, as the skills run it. */
export async function stepViaLauncher(cwd: string, argv: string[]): Promise<StepRun> {
  const r = await execa(launcher, ['plan', ...argv], { cwd, reject: false, timeout: 120_000, stdin: 'ignore' });
  return { code: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr, json: jsonOf(r.stdout) };
}

/** Step outputs are checked against their schema; an `error` output against step-error's. */
export async function checkedStep(run: (cwd: string, argv: string[]) => Promise<StepRun>, cwd: string, argv: string[]): Promise<StepRun> {
  const r = await run(cwd, argv);
  const name = argv[0]!;
  await expectSchema(r.json && 'error' in r.json ? 'step-error' : name, r.json);
  return r;
}

/**
 * `plan commit` (`argv`: its words) as the skill runs it: again while the gate is still running
 * (`gate.state: "running"`: a gate run may outlast one call's `--wait`, all the more on a busy
 * machine), so the answer read is the verdict. The last call's output, with what each call says
 * of itself alone — the tasks it integrated, its notices, the gate runs that ended in it, their
 * blame and flakes — gathered over the calls, as the lead reads them one after another. The
 * test's time limit is what catches a gate that never ends.
 */
export async function settledCommit(run: (cwd: string, argv: string[]) => Promise<StepRun>, cwd: string, argv: string[] = ['commit']): Promise<StepRun> {
  const said: { tasks: unknown[]; notices: unknown[]; gate: Record<'runs' | 'blamed' | 'flakes' | 'notices', unknown[]> } = {
    tasks: [],
    notices: [],
    gate: { runs: [], blamed: [], flakes: [], notices: [] },
  };
  for (;;) {
    const r = await checkedStep(run, cwd, argv);
    if (r.code !== 0 || r.json === null || 'error' in r.json) return r;
    said.tasks.push(...r.json.tasks);
    said.notices.push(...(r.json.notices ?? []));
    for (const key of ['runs', 'blamed', 'flakes', 'notices'] as const) said.gate[key].push(...(r.json.gate?.[key] ?? []));
    if (r.json.gate?.state === 'running') continue;
    const json = { ...r.json, tasks: said.tasks, ...(r.json.notices ? { notices: said.notices } : {}) };
    if (r.json.gate) json.gate = { ...r.json.gate, ...said.gate };
    return { ...r, json };
  }
}

/** Run the fake worker as a Task subagent would run: the prompt file's text in, the final text out. */
export async function fakeSubagent(cwd: string, promptFile: string, model: string): Promise<string> {
  const prompt = await readFile(promptFile, 'utf8');
  // Through the process starter, as git is: a fork of this test process (about 1 GB) costs it
  // tens of milliseconds of CPU.
  const ended = await runProcess({
    file: process.execPath,
    args: [fakeWorker, '-p', '--output-format', 'stream-json', '--verbose', '--model', model],
    cwd,
    env: process.env,
    input: prompt,
    timeoutMs: 60_000,
  });
  const stdout = ended.kind === 'exited' ? ended.stdout.toString('utf8') : '';
  const result = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; result?: string })
    .reverse()
    .find((e) => e.type === 'result');
  return result?.result ?? '';
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

let agents = 0;

/**
 * A worktree as Claude Code makes one for a Task subagent dispatched with `isolation: "worktree"`
 * (seen on 2.1.330, test/support/CLI-NOTES.md): `<repo>/.claude/worktrees/agent-<id>` on a new
 * branch `worktree-agent-<id>`, from the session's HEAD.
 */
export async function agentWorktreeFor(repo: string): Promise<{ dir: string; branch: string }> {
  const id = `t${process.pid}n${++agents}`;
  const dir = join(repo, '.claude', 'worktrees', `agent-${id}`);
  // One `git worktree add` at a time: parallel ones race on .git/worktrees/ (seen as "failed to read …/commondir").
  const added = adding.then(() => runGit(repo, ['worktree', 'add', '-q', '-b', `worktree-agent-${id}`, dir, 'HEAD']));
  adding = added.then(
    () => undefined,
    () => undefined,
  );
  await added;
  return { dir, branch: `worktree-agent-${id}` };
}
let adding: Promise<void> = Promise.resolve();

/**
 * A Task subagent dispatched with `isolation: "worktree"`, played by the fake worker: it works in
 * a worktree of its own; when it changed nothing, the worktree and its branch are removed and no
 * path is given back (as Claude Code does), else its path is.
 */
export async function isolatedSubagent(repo: string, promptFile: string, model: string): Promise<{ output: string; worktree?: string }> {
  const { dir, branch } = await agentWorktreeFor(repo);
  const base = (await runGit(dir, ['rev-parse', 'HEAD'])).trim();
  const output = await fakeSubagent(dir, promptFile, model);
  const status = await runGit(dir, ['status', '--porcelain', '-uall']);
  // As Claude Code 2.1.330 does (test/skills/lead-real.test.ts): kept when it changed files or committed.
  const committed = (await runGit(dir, ['rev-parse', 'HEAD'])).trim() !== base;
  if (status.trim() !== '' || committed) return { output, worktree: dir };
  await runGit(repo, ['worktree', 'remove', '--force', dir]);
  await runGit(repo, ['branch', '-D', branch]);
  return { output };
}

/** Worktrees git has registered for `repo` besides its own checkout, and its `worktree-agent-*` branches. */
export async function agentLeftovers(repo: string): Promise<{ worktrees: string[]; branches: string[] }> {
  const list = await runGit(repo, ['worktree', 'list', '--porcelain']);
  const worktrees = list
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .slice(1)
    .map((l) => l.slice('worktree '.length));
  const branches = (await runGit(repo, ['branch', '--list', 'worktree-agent-*', '--format=%(refname:short)'])).split('\n').filter(Boolean);
  return { worktrees, branches };
}

export interface LeadTranscript {
  setup: any;
  rounds: Array<{ next: any; finalize: any; commit: any }>;
  end: any;
}

/**
 * Play the /execute skill's lead without a model: setup, then rounds of next → a fake worker for
 * each task (in parallel, each given its prompt file, each in a worktree of its own as a Task
 * subagent dispatched with `isolation: "worktree"`) → finalize with each worker's last line and
 * worktree → commit, until `next` stalls, the breaker trips or the plan is archived. Every output
 * is checked against its schema.
 */
export async function playLead(repo: string, run: (cwd: string, argv: string[]) => Promise<StepRun> = step, setupArgs: string[] = []): Promise<LeadTranscript> {
  const t = await leadSetup(repo, run, setupArgs);
  if (t.setup.nothingToDo) return t;
  await leadRounds(repo, run, t, 50);
  if (t.end === null) throw new Error('the lead did not finish in 50 rounds');
  return t;
}

/** The lead's setup (`playLead`'s first step): the transcript its rounds go on. */
export async function leadSetup(
  repo: string,
  run: (cwd: string, argv: string[]) => Promise<StepRun> = step,
  setupArgs: string[] = [],
): Promise<LeadTranscript> {
  const setup = await checkedStep(run, repo, ['setup', ...setupArgs]);
  expect(setup.code, setup.stderr).toBe(0);
  return { setup: setup.json, rounds: [], end: null };
}

/**
 * The lead's rounds after its setup (`playLead`), at most `most` of them: added to `t`, and
 * `t.end` set once the run ends. A lead played in parts takes the same steps as in one go.
 */
export async function leadRounds(
  repo: string,
  run: (cwd: string, argv: string[]) => Promise<StepRun>,
  t: LeadTranscript,
  most: number,
): Promise<LeadTranscript> {
  for (let played = 0; played < most; played++) {
    const next = await checkedStep(run, repo, ['next']);
    expect(next.code, next.stderr).toBe(0);
    if (next.json.stall !== 'none') {
      t.end = next.json;
      return t;
    }
    const outputs = await Promise.all(
      next.json.tasks.map(async (task: any) => {
        expect(task.isolation).toBe('worktree');
        const ran = await isolatedSubagent(repo, task.promptFile, task.model);
        return { task: task.index, output: lastLine(ran.output), ...(ran.worktree ? { worktree: ran.worktree } : {}) };
      }),
    );
    const results = join(repo, '.design/prompts/results.json');
    await writeFile(results, JSON.stringify(outputs));
    const finalize = await checkedStep(run, repo, ['finalize', '--results', results]);
    expect(finalize.code, finalize.stderr).toBe(0);
    const commit = await settledCommit(run, repo);
    expect(commit.code, commit.stderr).toBe(0);
    t.rounds.push({ next: next.json, finalize: finalize.json, commit: commit.json });
    if (commit.json.archived || finalize.json.breaker.trip) {
      t.end = commit.json.archived ? commit.json : finalize.json;
      return t;
    }
  }
  return t;
}

/** `path blob` for every file of HEAD: equal trees have equal listings. */
export async function headTree(repo: string): Promise<string[]> {
  const listing = await runGit(repo, ['ls-tree', '-r', 'HEAD']);
  // `<mode> blob <hash>\t<path>`
  return listing
    .split('\n')
    .filter(Boolean)
    .map((l) => `${l.split('\t')[1]} ${l.split(' ')[2]?.split('\t')[0]}`)
    .sort();
}

/** Changes in the working tree outside .design/. */
export async function dirtyOutsideDesign(repo: string): Promise<string[]> {
  const status = await runGit(repo, ['status', '--porcelain', '-uall']);
  return status
    .split('\n')
    .filter(Boolean)
    .map((l) => l.slice(3))
    .filter((p) => !p.startsWith('.design/'));
}

/**
 * The checkout as a user gets it from git (tracked files, plus files not yet committed that git
 * does not ignore), without node_modules, copied into `dest`.
 */
export async function copyCheckout(dest: string): Promise<void> {
  const files = await runGit(repoRoot, ['ls-files', '--cached', '--others', '--exclude-standard', '-z']);
  for (const f of files.split('\0').filter(Boolean)) {
    await mkdir(dirname(join(dest, f)), { recursive: true });
    // Listed but deleted in the working tree: skip it.
    await cp(join(repoRoot, f), join(dest, f), { preserveTimestamps: true }).catch(() => undefined);
  }
}

/**
 * Repositories removed after each test (this registers the `afterEach`): `tempRepo` with `files`
 * committed, `repoWith` with `plan` written in it too.
 */
export function plannedRepos(): {
  tempRepo: (files: Record<string, string>) => Promise<TempGitRepo>;
  repoWith: (plan: Plan, files?: Record<string, string>) => Promise<{ repo: TempGitRepo; planPath: string }>;
} {
  const { repos } = leftovers();
  const tempRepo = async (files: Record<string, string>) => {
    const repo = await tempGitRepo(files);
    repos.push(repo);
    return repo;
  };
  return {
    tempRepo,
    repoWith: async (plan, files = { 'README.md': 'hello\n' }) => {
      const repo = await tempRepo(files);
      return { repo, planPath: await writePlan(repo.dir, plan) };
    },
  };
}
