// The plan tool. Most cases run in-process through `runProgram` with a captured Io; a handful
// spawn the real `scripts/plan.ts` to prove exit codes, stderr and the absence of stack traces.

import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { nodeArgsFor } from '../support/execute.ts';
import { type Io, runProgram } from '../../src/cli/command.ts';
import { planCommands } from '../../src/cli/plan/commands.ts';
import { computeOverlaps } from '../../src/core/plan/overlap.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { parsePlan } from '../../src/core/plan/validate.ts';
import { brokenCorpus, validFile, validText } from '../plans/corpus.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { makePlan } from '../support/plans.ts';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'scripts', 'plan.ts');
/** The plan format's reference every copy of foreman ships (the design skill's), which the "no plan" line names. */
const FORMAT = path.join(ROOT, 'skills', 'design', 'plan-format.md');

interface Ran {
  code: number;
  out: string[];
  err: string[];
}

async function plan(argv: string[], cwd: string): Promise<Ran> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = {
    out: (t) => out.push(...t.split('\n')),
    err: (t) => err.push(...t.split('\n')),
    cwd,
    env: {},
    isTTY: false,
    columns: 200,
  };
  const code = await runProgram('plan.ts', planCommands, argv, io);
  return { code, out, err };
}

/** The real script in a process of its own (bundled for the test run, or under tsx: `nodeArgsFor`); `npx tsx` itself is the last test's. */
async function spawnPlan(argv: string[], cwd: string) {
  const r = await execa('node', [...nodeArgsFor(SCRIPT), ...argv], { cwd, reject: false, env: { FOREMAN_DEBUG: '' } });
  return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr };
}

let tmp: string;
let n = 0;

/** The extra-fields plan with its task 1 (it reads src/export/) no longer after task 0 (it creates a file there): the two overlap. */
function overlappingText(): string {
  const p = JSON.parse(validText('extra-fields')) as Plan;
  p.tasks[1]!.blockedBy = [];
  return JSON.stringify(p, null, 2);
}

/** A fresh directory holding `text` at `.design/plan.json`; returns the plan path. */
async function planDir(text: string): Promise<string> {
  const dir = path.join(tmp, `case-${n++}`);
  await mkdir(path.join(dir, '.design'), { recursive: true });
  const file = path.join(dir, '.design', 'plan.json');
  await writeFile(file, text);
  return file;
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'foreman-plan-tool-'));
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('plan.ts check', () => {
  it.each(brokenCorpus().map((c) => [c.name, c] as const))('%s → exit 2, every problem on stderr', async (_, c) => {
    const file = await planDir(c.text);
    const r = await plan(['check', '--plan', file], tmp);
    expect(r.code).toBe(2);
    expect(r.out).toEqual([]);
    expect(r.err[0]).toBe(`${file}: the plan is invalid (${c.expected.length} problem${c.expected.length === 1 ? '' : 's'}):`);
    expect(r.err).toHaveLength(c.expected.length + 1);
    for (const line of c.expected)
      expect(
        r.err.some((e) => e.startsWith(`  ${line}`)),
        `${line}\n${r.err.join('\n')}`,
      ).toBe(true);
  });

  it.each(['minimal', 'extra-fields', 'realistic'])('%s → exit 0', async (name) => {
    const r = await plan(['check', '--plan', validFile(name)], tmp);
    expect(r).toMatchObject({ code: 0, err: [] });
    expect(r.out.join('\n')).toMatch(/: valid \(\d+ tasks?\)/);
  });

  it('warns of the hazards a valid plan holds, each with its fix, and exits 0; --strict exits 2', async () => {
    const hazard = JSON.parse(validText('minimal')) as Plan;
    hazard.tasks.push({ subject: 'Use a', prompt: 'Call greet from src/b.ts.', blockedBy: [], metadata: { files: { create: [], modify: ['src/a.ts'] } } });
    const file = await planDir(JSON.stringify(hazard));
    const line = 'tasks[1] modifies src/a.ts, which tasks[0] creates, but does not depend on it: add 0 to tasks[1].blockedBy';
    const how = 'to accept a warning instead of fixing it, add {"warning": "<its line>", "reason": "<why>"} to the plan\'s "acceptedWarnings"';
    const r = await plan(['check', '--plan', file], tmp);
    expect(r).toEqual({ code: 0, out: [`${file}: valid (2 tasks), with 1 warning:`, `  ${line}`, how], err: [] });
    const strict = await plan(['check', '--strict', '--plan', file], tmp);
    expect(strict).toEqual({ code: 2, out: [], err: [`${file}: valid (2 tasks), but --strict refuses its 1 warning:`, `  ${line}`, how] });
    // Accepted with a reason: no longer listed, and --strict passes.
    hazard.acceptedWarnings = [{ warning: line, reason: 'task 1 only appends to it' }];
    await writeFile(file, JSON.stringify(hazard));
    expect(await plan(['check', '--strict', '--plan', file], tmp)).toEqual({ code: 0, out: [`${file}: valid (2 tasks, 1 warning accepted)`], err: [] });
    // Fixed as it says: the acceptance matches nothing now, and is itself a warning.
    hazard.tasks[1]!.blockedBy = [0];
    await writeFile(file, JSON.stringify(hazard));
    const stale = await plan(['check', '--fix', '--plan', file], tmp);
    expect(stale.code).toBe(0);
    expect(stale.out.slice(0, 2)).toEqual([
      `${file}: valid (2 tasks); defaults and file overlaps written, with 1 warning:`,
      `  acceptedWarnings[0] accepts a warning the plan no longer has ("${line}"): remove it from acceptedWarnings`,
    ]);
  });

  it('in a git repository, checks the plan against the files of the last commit', async () => {
    const repo = await tempGitRepo({ 'src/index.ts': 'export {};\n', 'package.json': '{}\n', 'package-lock.json': '{}\n' });
    try {
      const p = JSON.parse(validText('minimal')) as Plan;
      p.tasks[0]!.prompt = 'Create src/a.ts and export it from src/index.ts.';
      p.tasks.push({
        subject: 'Add a dependency',
        prompt: 'Add left-pad to package.json.',
        blockedBy: [],
        metadata: { files: { create: [], modify: ['package.json', 'src/gone.ts'] } },
      });
      const file = path.join(repo.dir, '.design', 'plan.json');
      await repo.write({ '.design/plan.json': JSON.stringify(p) });
      // A file only in the working tree is not the last commit's: no worker would see it.
      await repo.write({ 'src/gone.ts': 'uncommitted\n' });
      const r = await plan(['check'], repo.dir);
      expect(r.code).toBe(0);
      expect(r.out.slice(1, 4)).toEqual([
        '  tasks[0].prompt names src/index.ts, which the task does not declare: add it to tasks[0].metadata.files.modify, or to tasks[0].metadata.reads if the task only reads it',
        "  tasks[1] modifies src/gone.ts, which the repository's last commit does not have and no task creates: correct the path, or move it from modify to create in tasks[1]",
        '  tasks[1] modifies package.json but does not declare package-lock.json, which installing its dependencies may rewrite: add package-lock.json to tasks[1].metadata.files.mayChange',
      ]);
      expect(r.out[0]).toBe(`${file}: valid (2 tasks), with 3 warnings:`);
    } finally {
      await repo.cleanup();
    }
  });

  it('reads .design/plan.json under the current directory by default', async () => {
    const file = await planDir(validText('minimal'));
    const r = await plan(['check'], path.dirname(path.dirname(file)));
    expect(r.code).toBe(0);
    expect(r.out.join('\n')).toContain(file);
  });

  it('--plan is resolved against the current directory', async () => {
    const file = await planDir(validText('minimal'));
    const r = await plan(['check', '--plan', path.join('.design', 'plan.json')], path.dirname(path.dirname(file)));
    expect(r.code).toBe(0);
  });

  it('a missing plan → exit 2 with one line saying where it looked, and how to write one in Claude Code and by hand', async () => {
    const r = await plan(['check'], tmp);
    expect(r.code).toBe(2);
    expect(r.err).toEqual([
      `no plan at ${path.join(tmp, '.design', 'plan.json')}: write one (in Claude Code: /foreman:design <goal>; by hand: the format is in ${FORMAT}), or pass --plan FILE`,
    ]);
    await expect(readFile(FORMAT, 'utf8')).resolves.toMatch(/^# The foreman plan format/);
  });

  // They lock the plan before reading it, and the lock is made beside it: no folder, no lock.
  it.each([
    ['retry', '0'],
    ['skip', '0', '--reason', 'r'],
    ['approve', '0'],
    ['reject', '0', '--reason', 'r'],
    ['declare', '0', 'a.txt'],
  ])('a missing plan and its folder: %s says so, as every command does (exit 2, not an internal error)', async (...argv) => {
    const dir = await mkdtemp(path.join(tmp, 'no-plan-'));
    const r = await plan(argv, dir);
    expect(r.err).toEqual([expect.stringMatching(new RegExp(`^no plan at ${path.join(dir, '.design', 'plan.json')}: write one \\(in Claude Code`))]);
    expect(r.code).toBe(2);
    expect(await readdir(dir)).toEqual([]);
  });

  it('a missing plan after one was archived names the archive, as every command that reads the plan says it', async () => {
    const file = await planDir(validText('minimal'));
    const dir = path.dirname(path.dirname(file));
    await mkdir(path.join(dir, '.design', 'history'));
    const archived = path.join(dir, '.design', 'history', '20261125T180804Z-plan.json');
    const done = JSON.parse(validText('minimal')) as { tasks: Array<{ status?: string }> };
    done.tasks[0]!.status = 'completed';
    await writeFile(archived, JSON.stringify(done));
    await rm(file);
    const line = `no plan at ${file}: the last one ("Add a greeting module", 1 of 1 task completed) was archived to ${archived}; write a new one (in Claude Code: /foreman:design <goal>; by hand: the format is in ${FORMAT}), or pass --plan FILE`;
    for (const command of ['check', 'status']) {
      const r = await plan([command], dir);
      expect(r.code).toBe(2);
      expect(r.err).toEqual([line]);
    }
    await execa('git', ['init', '-q'], { cwd: dir });
    const step = await plan(['setup'], dir);
    expect(step.code).toBe(2);
    expect(step.out.map((l) => JSON.parse(l))).toEqual([{ error: { kind: 'no-plan', message: line, details: [] } }]);
  });

  it('--fix writes defaults and computed overlaps, keeping unknown fields', async () => {
    const file = await planDir(overlappingText());
    const r = await plan(['check', '--fix', '--plan', file], tmp);
    expect(r.code).toBe(0);
    expect(r.out.join('\n')).toContain('written');
    const text = await readFile(file, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const fixed = JSON.parse(text) as Plan;
    const original = JSON.parse(overlappingText()) as Plan;
    // Unknown fields at every level survive.
    expect(fixed.designer).toEqual(original.designer);
    expect(fixed.reviewedAt).toBe('2024-05-01');
    expect(fixed.context).toEqual(original.context);
    expect(fixed.progress).toEqual(original.progress);
    expect(fixed.tasks[0]!.estimate).toBe('30m');
    expect(fixed.tasks[0]!.labels).toEqual(['export', 'csv']);
    expect(fixed.tasks[0]!.metadata).toEqual(original.tasks[0]!.metadata);
    expect(fixed.tasks[0]!.agent).toEqual({ role: 'backend engineer', temperature: 0.2, approach: 'stream rows', model: 'sonnet' });
    expect(fixed.tasks[1]!['x-custom']).toEqual({ nested: [1, 2, { deep: true }] });
    // Defaults and overlaps.
    expect(fixed.tasks.map((t) => [t.status, t.attempts, t.agent?.model, t.fileOverlaps])).toEqual([
      ['pending', 0, 'sonnet', [1]],
      ['pending', 0, 'sonnet', [0]],
      ['pending', 0, 'sonnet', []],
    ]);
    // Nothing else changed: stripping what --fix adds gives the original back.
    const stripped = structuredClone(fixed);
    for (const t of stripped.tasks) {
      delete t.status;
      delete t.attempts;
      delete t.fileOverlaps;
      if (t.agent) {
        delete t.agent.model;
        if (Object.keys(t.agent).length === 0) delete t.agent;
      }
    }
    expect(stripped).toEqual(original);
    // Written atomically: no temp file left beside it, and the result checks clean (also without --fix).
    expect(await readdir(path.dirname(file))).toEqual(['plan.json']);
    expect((await plan(['check', '--plan', file], tmp)).code).toBe(0);
    // Fixing again changes nothing.
    expect((await plan(['check', '--fix', '--plan', file], tmp)).code).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('--fix repairs stale and out-of-range fileOverlaps', async () => {
    for (const c of brokenCorpus().filter((x) => x.name.startsWith('file-overlaps-'))) {
      const file = await planDir(c.text);
      expect((await plan(['check', '--fix', '--plan', file], tmp)).code, c.name).toBe(0);
      const fixed = JSON.parse(await readFile(file, 'utf8')) as Plan;
      expect(fixed.tasks.map((t) => t.fileOverlaps)).toEqual(computeOverlaps(fixed.tasks));
      expect((await plan(['check', '--plan', file], tmp)).code, c.name).toBe(0);
    }
  });

  it('--fix on an otherwise invalid plan → exit 2 and the file is left untouched', async () => {
    const c = brokenCorpus().find((x) => x.name === 'several-semantic-problems')!;
    const file = await planDir(c.text);
    const r = await plan(['check', '--fix', '--plan', file], tmp);
    expect(r.code).toBe(2);
    expect(r.err).toHaveLength(c.expected.length + 1);
    expect(await readFile(file, 'utf8')).toBe(c.text);
  });

  it('--fix keeps completed tasks trimmed', async () => {
    // Task 7 reads src/metrics/, where task 4 writes: with nothing ordering them, they overlap.
    const realistic = JSON.parse(validText('realistic')) as Plan;
    realistic.tasks[7]!.blockedBy = [1];
    const file = await planDir(JSON.stringify(realistic));
    expect((await plan(['check', '--fix', '--plan', file], tmp)).code).toBe(0);
    const fixed = JSON.parse(await readFile(file, 'utf8')) as Plan;
    expect(fixed.tasks[0]).not.toHaveProperty('prompt');
    expect(fixed.tasks[0]).not.toHaveProperty('fileOverlaps');
    expect(fixed.tasks[4]!.fileOverlaps).toEqual([7]);
    expect(fixed.tasks[7]!.fileOverlaps).toEqual([4]);
  });
});

describe('plan.ts status, graph, ready', () => {
  it('status --json: goal, counts and every task', async () => {
    const r = await plan(['status', '--json', '--plan', validFile('realistic')], tmp);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.out.join('\n')) as {
      goal: string;
      counts: Record<string, number>;
      tasks: { index: number; subject: string; status: string; attempts: number; blockedBy: number[]; result: string | null }[];
    };
    expect(s.goal).toBe('Add rate limiting to the public HTTP API, with configuration, metrics and docs');
    expect(s.counts).toMatchObject({ pending: 7, completed: 1, failed: 0 });
    expect(s.tasks).toHaveLength(8);
    expect(s.tasks[0]).toMatchObject({
      index: 0,
      status: 'completed',
      attempts: 1,
      blockedBy: [],
      result: 'Hook after auth in src/server/hooks.ts; keys are on request.apiKey',
    });
    expect(s.tasks[3]).toMatchObject({
      index: 3,
      subject: 'Wire the limiter into the server',
      status: 'pending',
      attempts: 0,
      blockedBy: [1, 2],
      result: null,
    });
  });

  it('status: a table of tasks and the counts', async () => {
    const r = await plan(['status', '--plan', validFile('realistic')], tmp);
    expect(r.code).toBe(0);
    const text = r.out.join('\n');
    expect(text).toContain('Goal: Add rate limiting');
    expect(text).toContain('Wire the limiter into the server');
    expect(text).toMatch(/1 completed/);
    expect(text).toMatch(/7 pending/);
  });

  it("status: each failed, blocked or skipped task's reason in the table, and what left a pending task behind, clipped to one line", async () => {
    const long = `could not integrate the verified work of tasks 3: ${'x'.repeat(300)}`;
    const file = await planDir(
      JSON.stringify(
        makePlan([
          {
            subject: 'done',
            prompt: 'p',
            blockedBy: [],
            metadata: { files: { create: ['a'], modify: [] } },
            status: 'completed',
            attempts: 1,
            result: 'all good',
          },
          {
            subject: 'broke',
            prompt: 'p',
            blockedBy: [],
            metadata: { files: { create: ['b'], modify: [] } },
            status: 'failed',
            attempts: 3,
            result: 'acceptance check failed (tests pass)\nline two',
          },
          {
            subject: 'stuck',
            prompt: 'p',
            blockedBy: [],
            metadata: { files: { create: ['c'], modify: [] } },
            status: 'blocked',
            attempts: 1,
            result: 'BLOCKED: needs src/index.js',
          },
          {
            subject: 'after',
            prompt: 'p',
            blockedBy: [1],
            metadata: { files: { create: ['d'], modify: [] } },
            status: 'skipped',
            result: 'skipped: task 1 failed',
          },
          { subject: 'left', prompt: 'p', blockedBy: [], metadata: { files: { create: ['e'], modify: [] } }, status: 'pending', result: long },
          {
            subject: 'aside',
            prompt: 'p',
            blockedBy: [],
            metadata: { files: { create: ['f'], modify: [] } },
            status: 'completed',
            attempts: 1,
            result: 'ok',
            setAside: { attempt: 1, paths: ['package-lock.json'], commit: 'a'.repeat(40) },
          },
        ]),
      ),
    );
    const r = await plan(['status', '--plan', file], tmp);
    expect(r.code).toBe(0);
    const row = (subject: string) => r.out.find((line) => line.includes(`  ${subject}  `)) ?? '';
    expect(r.out.find((line) => line.startsWith('#'))).toMatch(/blocked by\s+reason$/);
    expect(row('done')).not.toContain('all good');
    expect(row('broke')).toMatch(/acceptance check failed \(tests pass\) line two$/);
    expect(row('stuck')).toMatch(/BLOCKED: needs src\/index\.js$/);
    expect(row('after')).toMatch(/skipped: task 1 failed$/);
    expect(row('left')).toContain('could not integrate the verified work of tasks 3: xxx');
    expect(row('left').length).toBeLessThan(200);
    expect(row('aside')).toMatch(/set aside \(not integrated\): package-lock\.json$/);
  });

  it('graph: a Mermaid flowchart with every task, every edge and status classes', async () => {
    const r = await plan(['graph', '--plan', validFile('realistic')], tmp);
    expect(r.code).toBe(0);
    expect(r.out[0]).toBe('flowchart TD');
    const text = r.out.join('\n');
    for (let i = 0; i < 8; i++) expect(text).toContain(`t${i}["${i}: `);
    for (const [from, to] of [
      [0, 1],
      [0, 2],
      [1, 3],
      [2, 3],
      [2, 4],
      [2, 5],
      [3, 6],
      [1, 7],
      [4, 7],
    ])
      expect(r.out).toContain(`  t${from} --> t${to}`);
    expect(r.out.filter((l) => l.includes('-->'))).toHaveLength(9);
    expect(text).toMatch(/classDef completed /);
    expect(text).toMatch(/classDef pending /);
    expect(text).not.toMatch(/classDef failed /);
    expect(r.out).toContain('  class t0 completed');
  });

  it('ready --json: the ready set, split so no two tasks in a group overlap', async () => {
    const r = await plan(['ready', '--json', '--plan', await planDir(overlappingText())], tmp);
    expect(r.code).toBe(0);
    // Tasks 0 and 1 overlap (1 reads src/export/, 0 creates src/export/csv.ts); 2 waits for 0.
    expect(JSON.parse(r.out.join('\n'))).toEqual({ ready: [0, 1], groups: [[0], [1]] });
    const realistic = await plan(['ready', '--json', '--plan', validFile('realistic')], tmp);
    expect(JSON.parse(realistic.out.join('\n'))).toEqual({ ready: [1, 2], groups: [[1, 2]] });
  });

  it('ready: text groups, and a clear line when nothing is ready', async () => {
    const r = await plan(['ready', '--plan', await planDir(overlappingText())], tmp);
    expect(r.code).toBe(0);
    const text = r.out.join('\n');
    expect(text).toMatch(/Group 1[^\n]*:\n\s+0: Write the exporter/);
    expect(text).toMatch(/Group 2[^\n]*:\n\s+1: Document the exporter/);
    const done = JSON.parse(validText('minimal')) as Plan;
    done.tasks[0]!.status = 'completed';
    const file = await planDir(JSON.stringify(done));
    const none = await plan(['ready', '--plan', file], tmp);
    expect(none.code).toBe(0);
    expect(none.out.join('\n')).toMatch(/No task is ready/);
    expect(JSON.parse((await plan(['ready', '--json', '--plan', file], tmp)).out.join('\n'))).toEqual({ ready: [], groups: [] });
  });

  it.each(['status', 'graph', 'ready'])('%s refuses an invalid plan with exit 2', async (cmd) => {
    const file = await planDir(brokenCorpus().find((c) => c.name === 'cycle-2')!.text);
    const r = await plan([cmd, '--plan', file], tmp);
    expect(r.code).toBe(2);
    expect(r.out).toEqual([]);
    expect(r.err).toContain('  tasks 0 → 2 → 0 form a cycle');
  });
});

describe('plan.ts usage', () => {
  it.each(planCommands.map((c) => c.name))('%s --help → exit 0 with usage and options', async (name) => {
    const r = await plan([name, '--help'], tmp);
    expect(r.code).toBe(0);
    expect(r.err).toEqual([]);
    expect(r.out[0]).toMatch(new RegExp(`^Usage: plan\\.ts ${name}\\b`));
    expect(r.out.join('\n')).toContain('--help');
  });

  it('each command documents its own flags', async () => {
    const help = async (name: string) => (await plan([name, '--help'], tmp)).out.join('\n');
    expect(await help('check')).toMatch(/--plan FILE[\s\S]*--fix/);
    expect(await help('status')).toMatch(/--json/);
    expect(await help('ready')).toMatch(/--json/);
    expect(await help('graph')).toMatch(/--plan FILE/);
  });

  it('--help lists every command', async () => {
    const r = await plan(['--help'], tmp);
    expect(r.code).toBe(0);
    for (const c of planCommands) expect(r.out.join('\n')).toContain(c.name);
  });

  it("--help lists the in-session steps apart, under a heading saying they are the execute skill's; the hidden gate not at all", async () => {
    const text = (await plan(['--help'], tmp)).out.join('\n');
    const heading = "\nThe /foreman:execute skill's steps (it runs them in a Claude Code session; you do not need to):\n";
    expect(text).toContain(heading);
    const [people, steps] = text.split(heading) as [string, string];
    const listed = (part: string) => [...part.matchAll(/^ {2}([a-z]+) +\S/gm)].map((m) => m[1]);
    expect(listed(steps)).toEqual(['setup', 'next', 'finalize', 'commit']);
    expect(listed(people).sort()).toEqual(
      planCommands
        .filter((c) => c.hidden !== true && c.sessionStep !== true)
        .map((c) => c.name)
        .sort(),
    );
    expect(listed(people)).toEqual(expect.arrayContaining(['check', 'status', 'retry', 'declare', 'probe']));
    expect(text).not.toMatch(/^ {2}gate /m);
  });

  it('no command → usage and exit 2', async () => {
    const r = await plan([], tmp);
    expect(r.code).toBe(2);
    expect([...r.out, ...r.err].join('\n')).toContain('Usage: plan.ts');
  });

  it.each([
    [['bogus'], /unknown command "bogus"/],
    [['check', '--bogus'], /--bogus/],
    [['check', '--plan'], /--plan/],
    [['status', '--json=yes'], /--json/],
    [['graph', 'extra'], /extra/],
    [['check', '-x'], /-x/],
  ])('%j → exit 2 with a one-line message', async (argv, message) => {
    const r = await plan(argv, tmp);
    expect(r.code).toBe(2);
    expect(r.out).toEqual([]);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(message);
  });
});

describe('the real script', () => {
  // A few real processes, run side by side: exit codes, streams, no stack traces.
  it('exit codes, stderr and no stack traces', async () => {
    const broken = brokenCorpus();
    const several = broken.find((c) => c.name === 'several-semantic-problems')!;
    const notJson = broken.find((c) => c.name === 'not-json')!;
    const severalFile = await planDir(several.text);
    const notJsonFile = await planDir(notJson.text);
    const fixFile = await planDir(overlappingText());
    await copyFile(validFile('realistic'), path.join(tmp, 'realistic.json'));
    const longSubject = `Create src/a.ts: ${'a greeting for each of the people named in the list, '.repeat(3).trim()}`;
    const minimal = JSON.parse(validText('minimal')) as { tasks: Array<{ subject: string }> };
    minimal.tasks[0]!.subject = longSubject;
    const longFile = await planDir(JSON.stringify(minimal));

    const [valid, invalid, garbage, unknownCmd, unknownFlag, help, fix, piped] = await Promise.all([
      spawnPlan(['check', '--plan', 'realistic.json'], tmp),
      spawnPlan(['check', '--plan', severalFile], tmp),
      spawnPlan(['check', '--plan', notJsonFile], tmp),
      spawnPlan(['frobnicate'], tmp),
      spawnPlan(['ready', '--frob'], tmp),
      spawnPlan(['graph', '--help'], tmp),
      spawnPlan(['check', '--fix', '--plan', fixFile], tmp),
      spawnPlan(['status', '--plan', longFile], tmp),
    ]);

    const noStack = (s: string) => {
      expect(s).not.toMatch(/^\s+at /m);
      expect(s).not.toContain('internal error');
    };

    expect(valid.code).toBe(0);
    expect(valid.stdout).toContain('valid (8 tasks)');
    expect(valid.stderr).toBe('');

    expect(invalid.code).toBe(2);
    expect(invalid.stdout).toBe('');
    for (const line of several.expected) expect(invalid.stderr).toContain(line);
    expect(invalid.stderr.trimEnd().split('\n')).toHaveLength(several.expected.length + 1);
    noStack(invalid.stderr);

    expect(garbage.code).toBe(2);
    // Where the text stops being JSON, as an editor shows it: a line and a column.
    expect(garbage.stderr).toContain('plan: not valid JSON at line 1, column 47: Unexpected token');
    expect(garbage.stderr.trimEnd().split('\n')).toHaveLength(2);
    noStack(garbage.stderr);

    for (const r of [unknownCmd, unknownFlag]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      noStack(r.stderr);
    }
    expect(unknownCmd.stderr).toContain('frobnicate');
    expect(unknownFlag.stderr).toContain('--frob');

    expect(help.code).toBe(0);
    // Run from elsewhere than the checkout's top folder, where `npx tsx scripts/plan.ts` would not run: its launcher.
    expect(help.stdout.split('\n')[0]).toBe(`Usage: ${path.join(ROOT, 'bin', 'foreman')} plan graph [--plan FILE]`);

    expect(fix.code).toBe(0);
    const fixed = parsePlan(await readFile(fixFile, 'utf8'));
    expect(fixed.ok).toBe(true);
    if (fixed.ok) expect(fixed.value.tasks.map((t) => t.fileOverlaps)).toEqual([[1], [0], []]);

    // Piped, not on a terminal: no width to fit, so the table keeps every cell whole.
    expect(piped.code).toBe(0);
    expect(piped.stdout.split('\n')[3]).toMatch(new RegExp(`^0  ${longSubject}  pending`));
  });

  it('runs as documented: npx tsx scripts/plan.ts', async () => {
    const r = await execa('npx', ['tsx', SCRIPT, 'check', '--plan', validFile('minimal')], { cwd: ROOT, reject: false });
    expect(r.exitCode).toBe(0);
    // One task, in the singular.
    expect(r.stdout).toBe(`${validFile('minimal')}: valid (1 task)`);
    const help = await execa('npx', ['tsx', SCRIPT, 'graph', '--help'], { cwd: ROOT, reject: false });
    expect(help.stdout).toMatch(/^Usage: npx tsx scripts\/plan\.ts graph/);
  });
});
