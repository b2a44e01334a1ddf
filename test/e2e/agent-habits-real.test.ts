// Workers that behave as real agents do, through the REAL Claude Code CLI (scripted model,
// headless, the default --sandbox auto): they commit their own work in their worktree although
// their prompt says not to. A task integrates first; then several self-committing workers are
// captured and integrated in the same run, by the integrator whose git processes were already
// running. Their work lands byte for byte (modes, symlinks, binary, CRLF, odd paths, a rename,
// work committed then extended uncommitted), and none of their own commits reaches the branch.
// In its sandbox, a worker's `git status` shows none of the sandbox's placeholder files and
// `git add -A` works.

import { lstat, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { runExecute } from '../support/execute.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { type ContentBlock, type ModelServer, scenario, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const support = await sandboxSupport();
const cwdOf = (req: ScriptedRequest) => req.cwd ?? '.';
const bash = (command: string) => () => [toolUse('Bash', { command, description: 'shell' })];
const write = (file: string, content: string) => (req: ScriptedRequest) => [toolUse('Write', { file_path: join(cwdOf(req), file), content })];
// As an agent's machine has it, the identity comes from the home folder's .gitconfig (a `git -c` is not auto-allowed).
const COMMIT = 'git commit -q -m wip';
const ODD = 'dir with space/ünï "q".txt';

/** What the shell-writer's refused Edit was told, and its second attempt's prompt. */
const refusals: string[] = [];
let shellWriterRetryPrompt = '';
/** What the widen-me worker's Edit of src/index.js met, each attempt. */
const widenAttempts: string[] = [];

/** What each worker's Bash commands printed, by task marker. */
const shellOutput = new Map<string, string[]>();
const recording = (marker: string) => (req: ScriptedRequest) => {
  const said = req.toolResults.map((r) => r.content);
  shellOutput.set(marker, [...(shellOutput.get(marker) ?? []), ...said]);
};
/** A turn that first keeps what the previous Bash call printed. */
const after =
  (marker: string, turn: (req: ScriptedRequest) => ContentBlock[]) =>
  (req: ScriptedRequest): ContentBlock[] => {
    recording(marker)(req);
    return turn(req);
  };

let server: ModelServer;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  server = await startModelServer({
    scenarios: [
      scenario({ match: 'TASK-MARKER: first', turns: [write('first.txt', 'integrated first\n'), () => [text('COMPLETED: first.txt')]] }),
      scenario({
        match: 'TASK-MARKER: shapes',
        turns: [
          write('bin/tool.sh', '#!/bin/sh\necho tool\n'),
          bash(
            `chmod +x bin/tool.sh && ln -s first.txt link-to-first && printf 'a\\r\\nb\\r\\n' > crlf.txt && printf '\\000\\001\\377bin' > data.bin && mkdir -p 'dir with space' && printf 'odd\\n' > '${ODD}'`,
          ),
          after('shapes', bash(`git status --porcelain && git add -A && ${COMMIT} && echo COMMITTED`)),
          // Committed, then extended without committing again.
          after('shapes', bash(`printf 'c\\r\\n' >> crlf.txt && git status --porcelain`)),
          after('shapes', () => [text('COMPLETED: every shape written')]),
        ],
      }),
      scenario({
        match: 'TASK-MARKER: rename',
        // A draft committed, then renamed in a second commit. (An existing declared file cannot be
        // renamed or removed from the worker's sandbox: Claude Code mounts each file an Edit rule
        // allows on its own, and a mount point cannot be moved: CLI-NOTES.md.)
        turns: [
          bash(`printf 'drafted\\n' > draft.txt && git add draft.txt && ${COMMIT}`),
          after('rename', bash(`git mv draft.txt new-name.txt && ${COMMIT} && echo COMMITTED`)),
          after('rename', () => [text('COMPLETED: renamed')]),
        ],
      }),
      // Issue 39's habits: tools that rewrite tracked files, status lines in markup or missing, a
      // refused write done through the shell.
      scenario({
        match: 'TASK-MARKER: tooling',
        turns: [
          write('src/feature.txt', 'feature\n'),
          bash(`printf 'rewritten by an install\\n' > package-lock.json && mkdir -p coverage && printf 'report\\n' > coverage/out.txt`),
          () => [text('Wrote it and ran the tools.\n\n**COMPLETED:** wrote the feature')],
        ],
      }),
      scenario({ match: 'TASK-MARKER: backticks', turns: [write('b.txt', 'b\n'), () => [text('Done.\n`COMPLETED: wrote b.txt`')]] }),
      scenario({ match: 'TASK-MARKER: silent', turns: [write('c.txt', 'c\n'), () => [text('I wrote c.txt, as asked.')]] }),
      scenario({
        match: 'TASK-MARKER: shell-writer',
        turns: [
          (req) => {
            if (req.prompt.includes('This is attempt 2')) shellWriterRetryPrompt = req.prompt;
            return [toolUse('Edit', { file_path: join(cwdOf(req), 'src/index.js'), old_string: '// index\n', new_string: '// index\nd-export\n' })];
          },
          (req) => {
            refusals.push(req.toolResults[0]?.content ?? '');
            return [toolUse('Bash', { command: `printf 'd-export\\n' >> src/index.js`, description: 'export it' })];
          },
          write('d.txt', 'd\n'),
          () => [text('COMPLETED: wrote d.txt and exported it')],
        ],
      }),
      // Issue 40: a worker refused the file it needs answers BLOCKED; --widen adds it and it runs again.
      scenario({
        match: 'TASK-MARKER: widen-me',
        turns: [
          (req) => [toolUse('Read', { file_path: join(cwdOf(req), 'src/index.js') })],
          (req) => [
            toolUse('Edit', { file_path: join(cwdOf(req), 'src/index.js'), old_string: '// index\n', new_string: '// index\nexport const wide = 1;\n' }),
          ],
          (req) => {
            widenAttempts.push(req.toolResults.at(-1)?.is_error === true ? 'refused' : 'edited');
            return req.toolResults.at(-1)?.is_error === true
              ? [text('BLOCKED: needs to modify src/index.js, which the task does not declare')]
              : [text('COMPLETED: exported it')];
          },
        ],
      }),
      scenario({
        match: 'TASK-MARKER: plain',
        turns: [write('plain.txt', 'plain\n'), bash(`git add plain.txt && ${COMMIT} && echo COMMITTED`), after('plain', () => [text('COMPLETED: plain.txt')])],
      }),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

const task = (marker: string, files: { create?: string[]; modify?: string[] }, blockedBy: number[] = []): Plan['tasks'][number] => ({
  subject: `task ${marker}`,
  prompt: `Do the ${marker} step.\nTASK-MARKER: ${marker}`,
  blockedBy,
  metadata: { files: { create: files.create ?? [], modify: files.modify ?? [] } },
  agent: { model: 'haiku' },
});

describe.runIf(support.ok)('workers that commit their own work, with the real Claude Code CLI', () => {
  let repo: TempGitRepo;
  let exitCode: number;
  let start: string;

  beforeAll(async () => {
    repo = await tempGitRepo({ 'README.md': '# sample\n' });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    await writeFile(join(home, '.gitconfig'), '[user]\n\tname = Agent\n\temail = agent@example.com\n');
    start = (await repo.git(['rev-parse', 'HEAD'])).trim();
    const plan: Plan = makePlan([
      task('first', { create: ['first.txt'] }),
      // Each starts once the first has integrated: the integrator's git processes are running.
      task('shapes', { create: ['bin/tool.sh', 'link-to-first', 'crlf.txt', 'data.bin', ODD] }, [0]),
      task('rename', { create: ['new-name.txt'] }, [0]),
      task('plain', { create: ['plain.txt'] }, [0]),
    ]);
    await writePlan(repo.dir, plan);
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--concurrency', '3'], claudeEnv(server.url, home));
    exitCode = r.exitCode ?? -1;
    if (r.exitCode !== 0) console.error(r.stdout, r.stderr);
  }, 240_000);

  it('completes every task and lands every file byte for byte', async () => {
    expect(exitCode).toBe(0);
    const files = async (name: string) => readFile(join(repo.dir, name));
    expect((await files('first.txt')).toString()).toBe('integrated first\n');
    expect((await files('bin/tool.sh')).toString()).toBe('#!/bin/sh\necho tool\n');
    expect(((await lstat(join(repo.dir, 'bin/tool.sh'))).mode & 0o111) !== 0).toBe(true);
    expect((await lstat(join(repo.dir, 'link-to-first'))).isSymbolicLink()).toBe(true);
    expect(await readlink(join(repo.dir, 'link-to-first'))).toBe('first.txt');
    expect(await files('crlf.txt')).toEqual(Buffer.from('a\r\nb\r\nc\r\n'));
    expect(await files('data.bin')).toEqual(Buffer.from([0, 1, 255, ...Buffer.from('bin')]));
    expect((await files(ODD)).toString()).toBe('odd\n');
    expect((await files('new-name.txt')).toString()).toBe('drafted\n');
    await expect(lstat(join(repo.dir, 'draft.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await files('plain.txt')).toString()).toBe('plain\n');
    const tree = await repo.git(['ls-tree', '-r', 'HEAD']);
    expect(tree).toMatch(/^100755 blob \S+\tbin\/tool\.sh$/m);
    expect(tree).toMatch(/^120000 blob \S+\tlink-to-first$/m);
    expect(await repo.git(['status', '--porcelain', '--', '.', ':!.design'])).toBe('');
  });

  it("puts only foreman's commits on the branch, none of the workers' own", async () => {
    const subjects = (await repo.git(['log', '--format=%s%n%b', `${start}..HEAD`])).split('\n');
    expect(subjects.join('\n')).not.toContain('wip');
    for (const commit of (await repo.git(['rev-list', `${start}..HEAD`])).trim().split('\n')) {
      expect(await repo.git(['log', '-1', '--format=%B', commit])).toMatch(/^Foreman-Tasks: /m);
    }
    const plan = await readPlan(repo.dir).catch(() => null);
    // The plan finished and was archived.
    expect(plan).toBeNull();
  });

  it("in a worker's sandbox, git shows none of the sandbox's placeholder files, and add -A and commit work", () => {
    for (const marker of ['shapes', 'rename', 'plain']) expect((shellOutput.get(marker) ?? []).join('\n'), marker).toContain('COMMITTED');
    const status = (shellOutput.get('shapes') ?? []).join('\n');
    expect(status).not.toMatch(/\.bashrc|\.gitconfig|\.mcp\.json|\.profile|\.vscode|\.idea|\.claude|can only add regular files/);
    expect(status).toContain('?? crlf.txt');
    // After the commit, only the extension is left uncommitted.
    expect(status).toMatch(/^ M crlf\.txt$/m);
  });
});

describe.runIf(support.ok)(
  'workers whose tools rewrite tracked files, whose status lines are in markup or missing, and who write a refused file through the shell, with the real Claude Code CLI',
  () => {
    let repo: TempGitRepo;
    let exitCode: number;
    let events: Array<{ type: string; task?: number; outcome?: string; reason?: string; warnings?: string[] }>;

    beforeAll(async () => {
      repo = await tempGitRepo({
        'README.md': '# sample\n',
        'package-lock.json': 'committed\n',
        'src/index.js': '// index\n',
        '.gitignore': 'node_modules/\n',
      });
      cleanups.push(repo.cleanup);
      const home = await tempHome();
      cleanups.push(() => rm(home, { recursive: true, force: true }));
      const check = (command: string) => ({ agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'it holds', check: command }] } });
      await writePlan(
        repo.dir,
        makePlan([
          {
            ...task('tooling', { create: ['src/feature.txt'] }),
            ...check('grep -q feature src/feature.txt && grep -q committed package-lock.json && test ! -e coverage/out.txt'),
          },
          { ...task('backticks', { create: ['b.txt'] }), ...check('test -f b.txt') },
          { ...task('silent', { create: ['c.txt'] }), ...check('grep -q c c.txt') },
          { ...task('shell-writer', { create: ['d.txt'] }), ...check('grep -q d-export src/index.js') },
        ]),
      );
      const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--concurrency', '4', '--json'], claudeEnv(server.url, home));
      exitCode = r.exitCode ?? -1;
      events = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    }, 240_000);

    const finished = (task: number) => events.filter((e) => e.type === 'task-finished' && e.task === task);

    it('a tool that rewrote a tracked lockfile and left coverage output costs nothing: the task completes with its declared work, the files set aside and named', async () => {
      expect(finished(0)).toEqual([
        expect.objectContaining({
          outcome: 'completed',
          warnings: [
            expect.stringMatching(
              /^changed files its task does not declare: coverage\/out\.txt, package-lock\.json \(set aside, not integrated; kept in refs\/foreman-aside\//,
            ),
          ],
        }),
      ]);
      expect(await readFile(join(repo.dir, 'src/feature.txt'), 'utf8')).toBe('feature\n');
      expect(await readFile(join(repo.dir, 'package-lock.json'), 'utf8')).toBe('committed\n');
    });

    it('a status line in bold or in backticks is the claim; no status line completes on its checks, with a warning', () => {
      expect(finished(1).map((e) => e.outcome)).toEqual(['completed']);
      expect(finished(2)).toEqual([
        expect.objectContaining({ outcome: 'completed', warnings: [expect.stringMatching(/^its reply had no COMPLETED\/FAILED\/BLOCKED line/)] }),
      ]);
    });

    it('a worker refused an Edit that writes the file through the shell: its retry is told to answer BLOCKED, and its second try ends the task blocked, naming the file', async () => {
      expect(refusals[0]).toMatch(/permission|denied/i);
      expect(finished(3).map((e) => e.outcome)).toEqual(['retry', 'blocked']);
      expect(finished(3)[0]!.reason).toMatch(/acceptance check failed \(it holds\).*changed files its task does not declare: src\/index\.js/s);
      expect(shellWriterRetryPrompt).toContain('The previous attempt changed or tried to change src/index.js, which this task does not declare');
      expect(finished(3)[1]!.reason).toMatch(/^the task needs src\/index\.js, which it does not declare/);
      expect(await readFile(join(repo.dir, 'src/index.js'), 'utf8')).toBe('// index\n');
      expect(exitCode).toBe(1);
    });
  },
);

describe.runIf(support.ok)('--widen with the real Claude Code CLI', () => {
  it('a worker refused the file it needs answers BLOCKED; the run adds the file, journals it, and the task runs again and completes with no attempt counted', async () => {
    const repo = await tempGitRepo({ 'README.md': '# sample\n', 'src/index.js': '// index\n' });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    await writePlan(repo.dir, makePlan([{ ...task('widen-me', { create: ['src/feature.js'] }), metadata: { files: { create: [], modify: [] } } }]));
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--widen', 'src/**', '--json'], claudeEnv(server.url, home));
    const events = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; outcome?: string; paths?: string[] });
    expect(r.exitCode, r.stdout.slice(-2000)).toBe(0);
    expect(widenAttempts).toEqual(['refused', 'edited']);
    expect(events.find((e) => e.type === 'task-widened')).toMatchObject({ paths: ['src/index.js'], recheck: false });
    expect(events.filter((e) => e.type === 'task-finished').map((e) => e.outcome)).toEqual(['interrupted', 'completed']);
    expect(await readFile(join(repo.dir, 'src/index.js'), 'utf8')).toBe('// index\nexport const wide = 1;\n');
  }, 240_000);
});
