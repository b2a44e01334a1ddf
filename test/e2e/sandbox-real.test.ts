// Workers in Claude Code's sandbox, with the REAL CLI (2.1.330) against the scripted model: a
// Bash command may write in the workspace and its own TMPDIR and nowhere else, reaches no network
// (an outside address is refused inside the sandbox, never reached), and, sandboxed, any Bash
// command runs without a `Bash(...)` rule: `ls`, `git status`, a single test file. Two sandboxed
// workers run at once, each in a worktree of the plan's pool (as a run gives them): sandboxes no
// longer share a directory, so they no longer trip on each other's placeholder files. And, the
// slots being clones with git directories of their own, the placeholders Claude Code's sandbox
// makes in the git directory it guards (`config.lock`…) appear in the slot's `.git/`, never in
// the person's: polled while a slow sandboxed command runs. And the person's deny rules, which
// `--setting-sources ""` drops with their settings, hold for a headless run's worker: its file tools
// and its sandboxed commands alike, in the person's checkout and in the worker's own copy.
// Needs the sandbox (Debian: bubblewrap, socat, ripgrep); says so and skips without it.

import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import { runWorker } from '../../src/adapters/worker/worker.ts';
import { openPool } from '../../src/adapters/git/worktree-pool.ts';
import { worktreesRoot } from '../../src/adapters/git/pool-slots.ts';
import { runGit, tempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, scenario, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { runExecute } from '../support/execute.ts';
import { makePlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const support = await sandboxSupport();
if (!support.ok) console.warn(`sandbox-real: skipped, the sandbox cannot run here: ${support.error}`);

// 10.255.255.1 is never contacted: inside the sandbox there is no route to anything but loopback.
const CONNECT_SCRIPT = `require('net').connect(9, '10.255.255.1')
  .on('connect', () => { console.log('NET-CONNECTED'); process.exit(0); })
  .on('error', (e) => { console.log('NET-REFUSED', e.code); process.exit(3); });
setTimeout(() => { console.log('NET-TIMEOUT'); process.exit(4); }, 5000);
`;

// A command that lasts long enough for the placeholders to be seen (a standalone `sleep` is refused by the CLI).
const SLOW_SCRIPT = `setTimeout(() => console.log('SLOW-DONE'), 3000);
`;

const steps: Array<{ name: string; command: (req: ScriptedRequest) => string }> = [
  { name: 'escape', command: () => `echo out > ${join(outside, 'escape.txt')}` },
  { name: 'network', command: () => 'node scripts/connect.js' },
  { name: 'ls', command: () => 'ls' },
  { name: 'git status', command: () => 'git status --short' },
  { name: 'test file', command: () => 'node --test test/one.test.js' },
  { name: 'inside', command: () => 'echo inside > inside.txt && touch "$TMPDIR/own" && echo "tmp-ok $FOREMAN_PROCESS"' },
  { name: 'slow', command: () => 'node scripts/slow.js' },
];

/** What a headless worker tries against the person's deny rules; `denied` says whether it should be refused. */
const readSteps: Array<{ name: string; denied: boolean; call: (req: ScriptedRequest) => { tool: string; input: Record<string, unknown> } }> = [
  { name: "Read the person's secret", denied: true, call: () => ({ tool: 'Read', input: { file_path: join(personRepo, 'secret.txt') } }) },
  { name: 'Read its own copy, one level down', denied: true, call: (req) => ({ tool: 'Read', input: { file_path: join(req.cwd ?? '.', 'deep/secret.txt') } }) },
  { name: 'Read the home secret', denied: true, call: () => ({ tool: 'Read', input: { file_path: join(personHome, 'home-secret.txt') } }) },
  { name: "cat the person's secret", denied: true, call: () => ({ tool: 'Bash', input: { command: `cat ${join(personRepo, 'secret.txt')}` } }) },
  { name: 'cat its own copy', denied: true, call: () => ({ tool: 'Bash', input: { command: 'cat deep/secret.txt' } }) },
  { name: 'cat the home secret', denied: true, call: () => ({ tool: 'Bash', input: { command: 'cat ~/home-secret.txt' } }) },
  { name: 'Read the README', denied: false, call: () => ({ tool: 'Read', input: { file_path: join(personRepo, 'README.md') } }) },
  { name: 'cat the README', denied: false, call: () => ({ tool: 'Bash', input: { command: 'cat README.md' } }) },
];

let server: ModelServer;
let outside: string;
let personRepo = '';
let personHome = '';
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  outside = await mkdtemp(join(tmpdir(), 'foreman-sandbox-outside-'));
  cleanups.push(() => rm(outside, { recursive: true, force: true }));
  server = await startModelServer({
    scenarios: [
      scenario({
        match: 'TASK-MARKER: person-denies',
        turns: [
          ...readSteps.map((s) => (req: ScriptedRequest) => {
            const { tool, input } = s.call(req);
            return [toolUse(tool, input)];
          }),
          (req: ScriptedRequest) => [toolUse('Write', { file_path: join(req.cwd ?? '.', 'notes.txt'), content: 'read what I may\n' })],
          [text('COMPLETED: wrote notes.txt')],
        ],
      }),
      scenario({
        match: 'TASK-MARKER: sandboxed',
        turns: [...steps.map((s) => (req: ScriptedRequest) => [toolUse('Bash', { command: s.command(req) })]), [text('COMPLETED: tried every command')]],
      }),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

describe.runIf(support.ok)('workers in the sandbox (real CLI)', () => {
  it('writes only in its worktree and its TMPDIR, reaches no network, and runs ls, git status and a test file without a rule; two at once, in worktrees of their own', async () => {
    const repo = await tempGitRepo({
      'README.md': '# sample\n',
      'test/one.test.js': "require('node:test')('one', () => {});\n",
      'scripts/connect.js': CONNECT_SCRIPT,
      'scripts/slow.js': SLOW_SCRIPT,
    });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    const pool = await openPool({
      repo: repo.dir,
      planId: 'sandbox-real',
      root: worktreesRoot(process.env),
      runSetup: async () => ({ exitCode: 0, timedOut: false, output: '' }),
    });
    cleanups.push(() => pool.remove());
    const head = (await runGit(repo.dir, ['rev-parse', 'HEAD'])).trim();
    const slots = await Promise.all(
      [0, 1].map(async () => {
        const slot = await pool.acquire(head);
        if (!slot.ok) throw new Error(`no worktree: ${JSON.stringify(slot.error)}`);
        return slot.value;
      }),
    );
    expect(slots[0]!.dir).not.toBe(slots[1]!.dir);

    // What appears in the person's git directory, and in each slot's, while the workers run.
    const personGit = join(repo.dir, '.git');
    const personBefore = new Set(readdirSync(personGit));
    const appearedInPerson = new Set<string>();
    const slotLocks = slots.map(() => 0);
    const poll = setInterval(() => {
      for (const name of readdirSync(personGit)) if (!personBefore.has(name)) appearedInPerson.add(name);
      slots.forEach((slot, index) => {
        if (existsSync(join(slot.dir, '.git', 'config.lock'))) slotLocks[index]! += 1;
      });
    }, 20);

    const runs = await Promise.all(
      slots.map(async (slot, index) => {
        const logPath = join(repo.dir, '.design', `worker-${index}.log`);
        const run = await runWorker({
          taskIndex: index,
          attempt: 1,
          prompt: `Try the commands.\nTASK-MARKER: sandboxed-${index}`,
          model: 'haiku',
          cwd: slot.dir,
          claudeBin,
          permissionMode: 'dontAsk',
          // Not one Bash rule: in the sandbox, Bash needs none.
          allowedTools: ['Read', 'Glob', 'Grep'],
          timeoutMs: 120_000,
          logPath,
          env: claudeEnv(server.url, home),
          sandbox: { allowedDomains: [] },
        });
        return { run, log: await readFile(logPath, 'utf8') };
      }),
    ).finally(() => clearInterval(poll));

    // The sandbox guarded each slot's own git directory (its placeholder seen there), and nothing
    // appeared in the person's: no `config.lock` to fail their `git config` or the other worker.
    expect(
      slotLocks.every((seen) => seen > 0),
      `config.lock seen in the slots: ${slotLocks.join(', ')}`,
    ).toBe(true);
    expect([...appearedInPerson]).toEqual([]);
    expect(existsSync(join(personGit, 'config.lock'))).toBe(false);

    for (const [index, { run, log }] of runs.entries()) {
      const dir = slots[index]!.dir;
      expect(run.outcome.kind, log).toBe('reported');
      expect(log).toContain(`cwd ${dir}`);
      const turns = server.turns().filter((t) => t.prompt.includes(`TASK-MARKER: sandboxed-${index}`));
      // The result of step i arrives with turn i + 1.
      const results = Object.fromEntries(steps.map((s, i) => [s.name, turns[i + 1]?.toolResults[0]]));

      expect(results['escape']?.content).toMatch(/Read-only file system|Operation not permitted|Permission denied/);

      expect(results['network']?.content).toContain('NET-REFUSED');
      expect(results['network']?.content).not.toContain('NET-CONNECTED');

      expect(results['ls']?.is_error).toBe(false);
      expect(results['ls']?.content).toContain('README.md');
      expect(results['git status']?.is_error).toBe(false);
      expect(results['test file']?.is_error).toBe(false);
      expect(results['test file']?.content).toMatch(/# pass 1/);
      expect(results['inside']?.content).toMatch(/tmp-ok \d+-\w+\.\d+/);
      expect(results['slow']?.is_error).toBe(false);
      expect(results['slow']?.content).toContain('SLOW-DONE');
      expect(await readFile(join(dir, 'inside.txt'), 'utf8')).toBe('inside\n');
      expect(run.permissionDenials).toEqual([]);
      // The sandbox's mount points for its protected files (.bashrc, .gitconfig, …) are gone afterwards.
      expect((await runGit(dir, ['status', '--short', '--ignored'])).trim().split('\n').sort()).toEqual(['?? inside.txt']);
    }
    expect(existsSync(join(outside, 'escape.txt'))).toBe(false);
    // The person's tree saw none of it.
    expect(existsSync(join(repo.dir, 'inside.txt'))).toBe(false);
    expect((await runGit(repo.dir, ['status', '--short', '--ignored'])).trim()).toBe('?? .design/');
  }, 180_000);

  it("holds a headless run's worker to the person's deny rules, which --setting-sources \"\" drops: its Read tool and its sandboxed commands, in the person's checkout and its own copy", async () => {
    const repo = await tempGitRepo({ 'README.md': '# sample\n', 'deep/secret.txt': 'TRACKED-SECRET\n' });
    cleanups.push(repo.cleanup);
    personRepo = repo.dir;
    personHome = await tempHome();
    cleanups.push(() => rm(personHome, { recursive: true, force: true }));
    // The person's own files and rules: a secret beside the code, one in the home folder; a
    // relative rule in the repository's local settings, a home rule in the user's.
    await writeFile(join(repo.dir, 'secret.txt'), 'ROOT-SECRET\n');
    await writeFile(join(personHome, 'home-secret.txt'), 'HOME-SECRET\n');
    await mkdir(join(repo.dir, '.claude'));
    await writeFile(join(repo.dir, '.claude/settings.local.json'), JSON.stringify({ permissions: { deny: ['Read(./secret.txt)'], allow: ['Bash(*)'] } }));
    await mkdir(join(personHome, '.claude'));
    await writeFile(join(personHome, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Read(~/home-secret.txt)'] } }));

    await writePlan(
      repo.dir,
      makePlan([
        {
          subject: 'reader',
          prompt: 'Read around, then write notes.\nTASK-MARKER: person-denies',
          blockedBy: [],
          metadata: { files: { create: ['notes.txt'], modify: [] } },
          agent: { model: 'haiku' },
        },
      ]),
    );
    const r = await runExecute(
      repo.dir,
      ['--claude-bin', claudeBin, '--max-attempts', '1', '--json', '--sandbox', 'on', '--no-gate'],
      claudeEnv(server.url, personHome),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const turns = server.turns().filter((t) => t.prompt.includes('TASK-MARKER: person-denies'));
    for (const [index, step] of readSteps.entries()) {
      const result = turns[index + 1]?.toolResults[0];
      expect(result, step.name).toBeDefined();
      if (step.denied) {
        expect(result!.content, step.name).not.toMatch(/ROOT-SECRET|TRACKED-SECRET|HOME-SECRET/);
        expect(result!.is_error, step.name).toBe(true);
        // The file tool by the rule itself, the command by the sandbox Claude Code gives the rule to.
        expect(result!.content, step.name).toMatch(
          step.call({ cwd: '.' } as ScriptedRequest).tool === 'Read' ? /denied by your permission settings/ : /Permission denied/,
        );
      } else {
        expect(result!.is_error, `${step.name}: ${result!.content}`).toBe(false);
        expect(result!.content, step.name).toContain('# sample');
      }
    }
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('read what I may\n');
  }, 180_000);
});
