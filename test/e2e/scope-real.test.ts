// Edit scope with the REAL Claude Code CLI as the worker, driven by the scripted model: a worker
// may change exactly its task's declared files, whatever the person's own Claude Code settings
// allow. The scripted model tries to write everywhere else; the files must not change.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { worktreesRoot } from '../../src/adapters/git/pool-slots.ts';
import { runExecute } from '../support/execute.ts';
import { tempGitRepo } from '../support/git-repo.ts';
import { type ModelServer, scenario, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, readPlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';

const WIDE_OPEN = JSON.stringify({ permissions: { allow: ['Write', 'Edit', 'Bash(*)'] } });

let server: ModelServer;
let outside: string;
const cleanups: Array<() => Promise<void>> = [];

const write = (file: string, content: string) => (req: ScriptedRequest) => [
  toolUse('Write', { file_path: file.startsWith('/') ? file : join(req.cwd ?? '.', file), content }),
];

beforeAll(async () => {
  outside = await mkdtemp(join(tmpdir(), 'foreman-outside-'));
  cleanups.push(() => rm(outside, { recursive: true, force: true }));
  server = await startModelServer({
    scenarios: [
      scenario({
        match: 'TASK-MARKER: scoped',
        turns: [
          write('src/extra.txt', 'undeclared new file\n'),
          write('README.md', 'overwritten\n'),
          write(join(outside, 'escape.txt'), 'outside the repository\n'),
          [toolUse('Bash', { command: 'echo bashed > bashed.txt' })],
          write('src/i.ts', 'export const i = 1;\n'),
          write('src/notes.txt', 'the same name one level down\n'),
          write('src/[id].ts', 'export const id = 1;\n'),
          write('notes.txt', 'declared\n'),
          [text('COMPLETED: wrote src/[id].ts and notes.txt')],
        ],
      }),
      scenario({
        match: 'TASK-MARKER: refused',
        turns: [write('src/forbidden.txt', 'no\n'), [text('FAILED: I was not allowed to write src/forbidden.txt')]],
      }),
    ],
  });
});

afterAll(async () => {
  await server?.close();
  for (const c of cleanups) await c();
});

describe('edit scope with the real Claude Code CLI', () => {
  it("lets a worker change its declared files only, even when the person's settings allow Write and Bash(*)", async () => {
    const repo = await tempGitRepo({
      'README.md': '# sample\n',
      // The project's own settings allow everything too.
      '.claude/settings.json': WIDE_OPEN,
      '.claude/settings.local.json': WIDE_OPEN,
    });
    cleanups.push(repo.cleanup);
    const home = await tempHome();
    cleanups.push(() => rm(home, { recursive: true, force: true }));
    await mkdir(join(home, '.claude'), { recursive: true });
    await writeFile(join(home, '.claude/settings.json'), WIDE_OPEN);
    // A trusted workspace, so the CLI would honour the project settings' allow rules.
    const trusted = { hasTrustDialogAccepted: true };
    await writeFile(join(home, '.claude.json'), JSON.stringify({ projects: { [repo.dir]: trusted, [await realpath(repo.dir)]: trusted } }));

    const planPath = await writePlan(
      repo.dir,
      makePlan([
        {
          subject: 'scoped',
          prompt: 'Write the id module.\nTASK-MARKER: scoped',
          blockedBy: [],
          metadata: { files: { create: ['src/[id].ts', 'notes.txt'], modify: [] } },
          agent: { model: 'haiku' },
        },
        {
          subject: 'refused',
          prompt: 'Try.\nTASK-MARKER: refused',
          blockedBy: [],
          metadata: { files: { create: ['src/allowed.txt'], modify: [] } },
          agent: { model: 'haiku' },
        },
      ]),
    );
    // Without the sandbox: Bash is limited to the judged commands (in the sandbox any Bash command
    // may run, its writes kept to the repository: test/e2e/sandbox-real.test.ts).
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--max-attempts', '1', '--json', '--sandbox', 'off'], claudeEnv(server.url, home));
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(1); // task 1 failed, as scripted

    // Nothing outside the declared files changed.
    expect(await readFile(join(repo.dir, 'README.md'), 'utf8')).toBe('# sample\n');
    for (const f of ['src/extra.txt', 'bashed.txt', 'src/i.ts', 'src/notes.txt', 'src/forbidden.txt']) expect(existsSync(join(repo.dir, f)), f).toBe(false);
    expect(existsSync(join(outside, 'escape.txt'))).toBe(false);

    // The declared files were written and committed.
    expect(await readFile(join(repo.dir, 'src/[id].ts'), 'utf8')).toBe('export const id = 1;\n');
    expect(await readFile(join(repo.dir, 'notes.txt'), 'utf8')).toBe('declared\n');
    const after = await readPlan(planPath);
    expect(after.tasks[0]!.status).toBe('completed');
    expect((await repo.git(['show', '--name-only', '--format=', after.tasks[0]!.commit!])).trim()).toBe('notes.txt\nsrc/[id].ts');
    expect(await repo.git(['status', '--porcelain', '--', '.', ':!.design'])).toBe('');

    // The failed attempt's reason names the denied write; the logs show every denial readably.
    expect(after.tasks[1]!.status).toBe('failed');
    expect(after.tasks[1]!.result).toMatch(/permission denied for: Write\(.*src\/forbidden\.txt\)/);
    const log1 = await readFile(join(repo.dir, '.design/worker-1.log'), 'utf8');
    expect(log1).toMatch(/! permission denied: Write src\/forbidden\.txt — Permission to use Write has been denied/);
    const log0 = await readFile(join(repo.dir, '.design/worker-0.log'), 'utf8');
    for (const what of [
      'Write src/extra.txt',
      'Write README.md',
      `Write ${join(outside, 'escape.txt')}`,
      'Bash echo bashed > bashed.txt',
      'Write src/i.ts',
      'Write src/notes.txt',
    ]) {
      expect(log0).toContain(`! permission denied: ${what}`);
    }
    // Each worker worked in a worktree of the plan under FOREMAN_WORKTREES, never in the repository.
    const root = await realpath(worktreesRoot(process.env));
    for (const log of [log0, log1]) {
      const cwd = / · cwd (.+)$/m.exec(log)?.[1] ?? '';
      expect(cwd.startsWith(`${root}/`), cwd).toBe(true);
    }
    // The person's allow rules never reached the worker; the API key still did.
    expect(log0).toContain(`--setting-sources ''`);
    expect(log0).not.toContain('Bash(*)');
  });
});
