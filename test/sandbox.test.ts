// foreman's own commands in the operating-system sandbox (@anthropic-ai/sandbox-runtime): an
// acceptance check may write in the workspace and its own TMPDIR only and reaches no network but
// its own loopback; `--sandbox on` refuses to run without the sandbox (exit 3, naming what to
// install); a run with the sandbox verifies a task whose check writes outside as failed.
// Tests that need the sandbox say so and skip when it is missing (Debian: bubblewrap socat ripgrep).

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runShell } from '../src/adapters/sandbox/checks.ts';
import { installAdvice, ownSandboxNotice, sandboxSupport } from '../src/adapters/sandbox/sandbox.ts';
import { runtimeSettings } from '../src/adapters/sandbox/sandbox-spawn.ts';
import { executeScript, fakeWorker, nodeArgsFor, runExecute, runExecuteProcess } from './support/execute.ts';
import { findMarked, PROCESS_MARKER_VARIABLE } from '../src/adapters/processes/process-markers.ts';
import { tempGitRepo } from './support/git-repo.ts';
import { fakeTask, makePlan, readPlan, writePlan } from './support/plans.ts';
import { waitFor } from './support/wait.ts';
import { execa } from 'execa';

const support = await sandboxSupport();
if (!support.ok) console.warn(`sandbox tests: the sandboxed cases are skipped, the sandbox cannot run here: ${support.error}`);

let dir: string;
let workspace: string;
let outside: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-sandbox-test-'));
  workspace = join(dir, 'workspace');
  outside = join(dir, 'outside');
  await mkdir(workspace);
  await mkdir(outside);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const inSandbox = (command: string, allowedDomains: string[] = []) =>
  runShell(command, { cwd: workspace, timeoutMs: 60_000, sandbox: { writable: [workspace], allowedDomains } });

describe('runtime settings', () => {
  it('allow writes in the workspace and the own TMPDIR only, and no host unless the plan names some', () => {
    expect(runtimeSettings({ writable: ['/w'], allowedDomains: [] }, '/t')).toEqual({
      filesystem: { allowWrite: ['/w', '/t'], denyWrite: [], denyRead: [] },
      network: { allowedDomains: [], deniedDomains: [] },
    });
    expect(runtimeSettings({ writable: ['/w'], allowedDomains: ['registry.npmjs.org'] }, '/t')).toMatchObject({
      network: { allowedDomains: ['registry.npmjs.org'] },
    });
    expect(
      runtimeSettings({ writable: ['/w'], allowedDomains: [] }, '/t', { denyRead: ['/home/me/.aws/**'], denyWrite: ['/w/locked.txt'] }).filesystem,
    ).toEqual({ allowWrite: ['/w', '/t'], denyWrite: ['/w/locked.txt'], denyRead: ['/home/me/.aws/**'] });
  });

  it('names what to install', () => {
    expect(installAdvice('linux')).toContain('apt-get install bubblewrap socat ripgrep');
    expect(installAdvice('darwin')).toContain('ripgrep');
  });
});

describe.runIf(support.ok)('checks in the sandbox', () => {
  it('a check that writes outside the workspace fails, and the file is not written', async () => {
    const r = await inSandbox(`echo escaped > ${join(outside, 'escape.txt')}`);
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/Read-only file system/);
    expect(existsSync(join(outside, 'escape.txt'))).toBe(false);
  });

  it('a check that reaches an outside address fails at once, in the sandbox, without traffic', async () => {
    const script = `require('net').connect(9, '10.255.255.1').on('connect', () => process.exit(0)).on('error', (e) => { console.log('refused', e.code); process.exit(3); }); setTimeout(() => process.exit(4), 5000);`;
    await writeFile(join(workspace, 'connect.js'), script);
    const r = await inSandbox('node connect.js');
    expect(r.exitCode).toBe(3);
    expect(r.output).toContain('refused ENETUNREACH');
  });

  it('writes in the workspace and its own TMPDIR, and its own loopback works', async () => {
    const server = `const s = require('net').createServer((c) => c.end('pong')).listen(0, '127.0.0.1', () => require('net').connect(s.address().port, '127.0.0.1').on('data', (d) => { console.log(String(d)); process.exit(0); }));`;
    await writeFile(join(workspace, 'loop.js'), server);
    const r = await inSandbox(
      `echo inside > inside.txt && touch "$TMPDIR/own" && case "$TMPDIR" in ${tmpdir()}/foreman-sandbox-*) echo own-tmp;; esac && node loop.js`,
    );
    expect(r.output).toContain('own-tmp');
    expect(r.output).toContain('pong');
    expect(r.exitCode).toBe(0);
    expect(existsSync(join(workspace, 'inside.txt'))).toBe(true);
  });

  it('a run verifies a task whose acceptance check writes outside the repository as failed', async () => {
    const repo = await tempGitRepo({ 'README.md': '# r\n' });
    try {
      const target = join(outside, 'from-check.txt');
      const task = fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } });
      task.agent = { ...task.agent, acceptanceCriteria: [{ criterion: 'writes outside', check: `test -f a.txt && echo x > ${target}` }] };
      const planPath = await writePlan(repo.dir, makePlan([task]));
      const r = await runExecute(repo.dir, ['--sandbox', 'on', '--max-attempts', '1']);
      expect(r.exitCode, r.stderr + r.stdout).toBe(1);
      expect(existsSync(target)).toBe(false);
      expect((await readPlan(planPath)).tasks[0]!.status).toBe('failed');
    } finally {
      await repo.cleanup();
    }
  }, 120_000);
});

describe.runIf(support.ok)("the person's Read and Edit deny rules in foreman's own sandboxed commands", () => {
  /** A repository whose settings deny reading `secret.txt` outside it and `.env` in it, and writing `locked.txt`, plus `extra` rules. */
  async function repoWithRules(extra: string[] = []): Promise<{ repo: string; secret: string }> {
    const repo = await mkdtemp(join(dir, 'repo-'));
    const secret = join(outside, 'secret.txt');
    await writeFile(secret, 'SECRET=1\n');
    await mkdir(join(repo, '.claude'));
    await writeFile(
      join(repo, '.claude/settings.json'),
      JSON.stringify({ permissions: { deny: [`Read(/${secret})`, 'Read(./.env)', 'Edit(./locked.txt)', ...extra] } }),
    );
    return { repo, secret };
  }
  const check = (command: string, repo: string) =>
    runShell(command, { cwd: workspace, timeoutMs: 60_000, sandbox: { writable: [workspace], allowedDomains: [], rulesOf: repo } });

  it('a check that reads a file a Read deny rule names fails; one that writes a file an Edit deny rule names too; the rest reads and writes', async () => {
    const { repo, secret } = await repoWithRules();
    await writeFile(join(workspace, '.env'), 'TOKEN=2\n');
    await writeFile(join(workspace, 'locked.txt'), 'as it was\n');
    await writeFile(join(workspace, 'open.txt'), 'readable\n');
    const read = await check(`cat ${secret}`, repo);
    expect(read.exitCode).not.toBe(0);
    expect(read.output).toMatch(/secret\.txt: Permission denied/);
    expect(read.output).not.toContain('SECRET');
    const local = await check('cat .env', repo);
    expect(local.exitCode).not.toBe(0);
    expect(local.output).not.toContain('TOKEN');
    const write = await check('echo changed > locked.txt', repo);
    expect(write.exitCode).not.toBe(0);
    expect(await readFile(join(workspace, 'locked.txt'), 'utf8')).toBe('as it was\n');
    const rest = await check('cat open.txt && echo new > new.txt', repo);
    expect(rest.exitCode, rest.output).toBe(0);
    expect(rest.output).toContain('readable');
  });

  it('where a rule cannot be held as written, the others still hold, and the notice names it', async () => {
    const { repo, secret } = await repoWithRules(['Read', 'Edit(**/*.lock)']);
    const read = await check(`cat ${secret}`, repo);
    expect(read.exitCode).not.toBe(0);
    expect(read.output).not.toContain('SECRET');
    const notice = await ownSandboxNotice(repo);
    expect(notice).toContain('cannot be held as written by the sandbox foreman runs its own commands in');
    expect(notice).toContain('Read: every file; Edit(**/*.lock): a pattern');
    expect(notice).not.toContain('secret.txt');
    expect(await ownSandboxNotice((await repoWithRules()).repo)).toBeNull();
  });

  it('a run whose acceptance check reads a denied file verifies the task as failed', async () => {
    const repo = await tempGitRepo({ 'README.md': '# r\n' });
    try {
      const secret = join(outside, 'run-secret.txt');
      await writeFile(secret, 'SECRET=3\n');
      await mkdir(join(repo.dir, '.claude'));
      await writeFile(join(repo.dir, '.claude/settings.local.json'), JSON.stringify({ permissions: { deny: [`Read(/${secret})`, 'Read'] } }));
      await writeFile(join(repo.dir, '.git/info/exclude'), '.claude/\n');
      const task = fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } });
      task.agent = { ...task.agent, acceptanceCriteria: [{ criterion: 'reads the secret', check: `test -f a.txt && grep -q SECRET ${secret}` }] };
      const planPath = await writePlan(repo.dir, makePlan([task]));
      const r = await runExecute(repo.dir, ['--sandbox', 'on', '--max-attempts', '1']);
      expect(r.exitCode, r.stderr + r.stdout).toBe(1);
      expect((await readPlan(planPath)).tasks[0]!.status).toBe('failed');
      // The rule it cannot hold is said, once.
      expect(r.stdout.split('Read: every file').length - 1).toBe(1);
    } finally {
      await repo.cleanup();
    }
  }, 120_000);
});

describe.runIf(support.ok)('a sandboxed check orphaned by kill -9', () => {
  it('is ended by the next run, with everything carrying its marker, and never writes', async () => {
    const repo = await tempGitRepo({ 'README.md': '# r\n' });
    try {
      // Until the test releases it (a file outside the worktree, which the sandboxed check may read
      // but not write), it sleeps before overwriting the verified file; then it passes at once.
      const release = join(dir, `release-${Date.now()}`);
      const check = `if [ -e '${release}' ]; then exit 0; fi; sleep 1000; echo late > a.txt`;
      const task = fakeTask('A', { create: ['a.txt'], acceptance: [{ criterion: 'a exists', check }], fake: { write: { 'a.txt': 'a\n' } } });
      await writePlan(repo.dir, makePlan([task]));
      // --no-probe: the probe would run this check too (in its own checkout) before any worker.
      const first = execa('node', [...nodeArgsFor(executeScript), '--claude-bin', fakeWorker, '--sandbox', 'on', '--no-probe'], {
        cwd: repo.dir,
        reject: false,
        stdin: 'ignore',
      });
      let marker: string | undefined;
      await waitFor('the sandboxed check to sleep', async () => {
        // The check is recorded the moment it is spawned; it is asleep in the sandbox once its `sleep` runs.
        // Read while the run rewrites it in place: a read can land mid-write (the file is whole for
        // the run that follows a kill, which reads it once the writer is gone), so a torn read is "not yet".
        const records = await readFile(join(repo.dir, '.design/workers.json'), 'utf8')
          .then((text) => JSON.parse(text) as Array<{ kind: string; marker?: string }>)
          .catch(() => []);
        marker = records.find((r) => r.kind === 'acceptance-check')?.marker;
        // The `sleep` itself, not a wrapper whose command line holds the check's text (the shell
        // foreman starts, bubblewrap): killed while those still set up, the check could fail at
        // once, with the sandbox host's bridges gone, and leave no orphan to test.
        return marker !== undefined && findMarked(PROCESS_MARKER_VARIABLE, marker).some((p) => /^(?:\S*\/)?sleep 1000$/.test(p.command));
      });
      expect(marker).toBeDefined();
      first.kill('SIGKILL');
      await first;
      // The sandboxed check (the runtime, bubblewrap, the shell, its sleep) outlived the orchestrator.
      expect(findMarked(PROCESS_MARKER_VARIABLE, marker!).length).toBeGreaterThan(0);
      await writeFile(release, '');

      // The next run comes a moment later, as a person's would. The sandbox runtime may have ended
      // the check itself by then (its parent is gone, and so is its output pipe); what still lives,
      // the next run must end and name.
      await new Promise((r) => setTimeout(r, 1000));
      const leftAlive = findMarked(PROCESS_MARKER_VARIABLE, marker!).length > 0;
      const r = await runExecute(repo.dir, ['--sandbox', 'on', '--no-probe']);
      expect(r.exitCode, r.stderr + r.stdout).toBe(0);
      if (leftAlive) expect(r.stdout).toContain('left running by an earlier run: the acceptance check of task 0');
      expect(findMarked(PROCESS_MARKER_VARIABLE, marker!)).toEqual([]);
      expect(await repo.git(['show', 'HEAD:a.txt'])).toBe('a\n');
    } finally {
      await repo.cleanup();
    }
  }, 120_000);
});

describe('--sandbox on without the sandbox', () => {
  it('refuses with exit 3 and says what to install (PATH without bwrap)', async () => {
    const repo = await tempGitRepo({ 'README.md': '# r\n' });
    try {
      await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'] })]));
      // A PATH with node and git only: no bwrap, socat or rg.
      const bin = join(dir, 'bin-without-bwrap');
      await mkdir(bin, { recursive: true });
      for (const tool of ['node', 'git', 'sh']) if (!existsSync(join(bin, tool))) await symlink(`/usr/bin/${tool}`, join(bin, tool));
      // A process of its own: the sandbox's support is asked once per process, with its PATH.
      const r = await runExecuteProcess(repo.dir, ['--sandbox', 'on'], { PATH: bin });
      expect(r.exitCode, r.stderr).toBe(3);
      expect(r.stderr).toMatch(/--sandbox on: the sandbox cannot run here \(.*bubblewrap \(bwrap\) not installed.*\)/);
      expect(r.stderr).toContain('apt-get install bubblewrap socat ripgrep');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      await repo.cleanup();
    }
  });

  it('auto goes on without it, saying so once as its first line: a warning naming why, what runs without it and what to install', async () => {
    const repo = await tempGitRepo({ 'README.md': '# r\n' });
    try {
      await writePlan(repo.dir, makePlan([fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } })]));
      const bin = join(dir, 'bin-without-bwrap');
      await mkdir(bin, { recursive: true });
      for (const tool of ['node', 'git', 'sh']) if (!existsSync(join(bin, tool))) await symlink(`/usr/bin/${tool}`, join(bin, tool));
      const r = await runExecuteProcess(repo.dir, ['--no-gate'], { PATH: bin });
      expect(r.exitCode, r.stdout + r.stderr).toBe(0);
      const first = r.stdout.split('\n')[0]!;
      expect(first).toMatch(/^foreman: warning: sandbox: off \(--sandbox auto: it cannot run here: .*bubblewrap \(bwrap\) not installed.*\): /);
      expect(first).toContain(
        "checks and the workers' Bash commands run without it, with this machine's network and files, and the workers' Bash stays limited to the commands their tasks are judged by; to sandbox them, install bubblewrap, socat and ripgrep",
      );
      expect(r.stdout.match(/sandbox: off/g)).toHaveLength(1);
      const journal = (await readFile(join(repo.dir, '.design/events.jsonl'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(journal.filter((e) => e.sandbox !== undefined)).toEqual([
        expect.objectContaining({ type: 'notice', level: 'warning', sandbox: expect.objectContaining({ mode: 'auto', sandboxed: false }) }),
      ]);
    } finally {
      await repo.cleanup();
    }
  });

  it('rejects an unknown mode (exit 2)', async () => {
    const r = await runExecute(dir, ['--sandbox', 'sometimes']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('--sandbox expects one of auto, on, off, got "sometimes" (see --help)');
    const fromEnv = await runExecute(dir, [], { FOREMAN_SANDBOX: 'maybe' });
    expect(fromEnv.exitCode).toBe(2);
    expect(fromEnv.stderr).toContain('FOREMAN_SANDBOX expects one of auto, on, off, got "maybe"');
  });
});
