// Commit objects written by foreman's own code (src/adapters/git/commits.ts) are the ones
// `git commit-tree` writes: the same id for the same tree, parent, message, identity and dates;
// dates in the process's time zone as git writes them; and where git would write more (an
// encoding other than UTF-8), `commit-tree` writes it.

import { readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { CommitWriter } from '../../src/adapters/git/commits.ts';
import { integrate, Integrator } from '../../src/adapters/git/integrate.ts';
import { endGitSessions } from '../../src/adapters/git/runner.ts';
import { integrationRef } from '../../src/adapters/git/refs.ts';
import { repoRoot, tsxLoader } from '../support/execute.ts';
import { afterEachCleanups, runGit, tempGitRepo } from '../support/git-repo.ts';
import { restoreEnv } from '../support/env.ts';
import { childrenOf } from '../support/processes.ts';

const cleanups = afterEachCleanups();
const saved = { ...process.env };
afterEach(() => restoreEnv(saved));

async function writerIn(files: Record<string, string>) {
  const repo = await tempGitRepo(files);
  cleanups.push(() => repo.cleanup());
  const writer = new CommitWriter(repo.dir);
  cleanups.push(async () => writer.close());
  const head = (await repo.git(['rev-parse', 'HEAD'])).trim();
  const tree = (await repo.git(['rev-parse', 'HEAD^{tree}'])).trim();
  return { repo, writer, head, tree };
}

const written = async (pending: ReturnType<CommitWriter['write']>): Promise<string> => {
  const result = await pending;
  if (result === null || !result.ok) throw new Error(`not written: ${JSON.stringify(result)}`);
  return result.value;
};

describe('commits written without commit-tree', () => {
  it('are the commits commit-tree makes, byte for byte, for a name and a message beyond ASCII', async () => {
    const { repo, writer, head, tree } = await writerIn({ 'a.txt': 'a\n' });
    await repo.git(['config', 'user.name', 'Zoë "Q" Ng']);
    await repo.git(['config', 'user.email', 'zoe@example.com']);
    const dates = { GIT_AUTHOR_DATE: '2024-03-31 01:59:59 +0530', GIT_COMMITTER_DATE: '@1700000000 -0700' };
    Object.assign(process.env, dates);
    const message = 'foreman: integrate tasks 1, 2 — “quoted”\n\nbody line\n\nForeman-Tasks: 1, 2\nForeman-Plan: p\n';
    const mine = await written(writer.write(tree, head, message));
    const theirs = (await runGit(repo.dir, ['commit-tree', tree, '-p', head], { input: message, env: dates })).trim();
    expect(mine).toBe(theirs);
    // A message without its last newline, too.
    expect(await written(writer.write(tree, head, 'no newline'))).toBe(
      (await runGit(repo.dir, ['commit-tree', tree, '-p', head], { input: 'no newline', env: dates })).trim(),
    );
    expect((await readdir(tmpdir())).filter((name) => name.startsWith(`foreman-commit-${process.pid}-`))).toEqual([]);
  });

  it('date a commit at the time it is written, in the time zone of the process, as git does', async () => {
    const { repo, head, tree } = await writerIn({ 'a.txt': 'a\n' });
    // In a process of its own, its time zone from its environment (as a person's run gets it).
    const script = path.join(repo.dir, '.git', 'dates.mts');
    await writeFile(
      script,
      `import { CommitWriter, gitDate } from ${JSON.stringify(path.join(repoRoot, 'src/adapters/git/commits.ts'))};\n` +
        `const writer = new CommitWriter(process.cwd());\n` +
        `const commit = await writer.write(${JSON.stringify(tree)}, ${JSON.stringify(head)}, 'dated\\n');\n` +
        `writer.close();\n` +
        `console.log(JSON.stringify({ commit: commit && commit.ok ? commit.value : commit, winter: gitDate(Date.UTC(2024, 0, 15, 12)), summer: gitDate(Date.UTC(2024, 6, 15, 12)) }));\n`,
    );
    const run = async (zone: string) =>
      JSON.parse((await execa('node', ['--import', tsxLoader, script], { cwd: repo.dir, env: { TZ: zone }, timeout: 30_000 })).stdout) as {
        commit: string;
        winter: string;
        summer: string;
      };
    const before = Math.floor(Date.now() / 1000);
    const kolkata = await run('Asia/Kolkata');
    const after = Math.ceil(Date.now() / 1000);
    const raw = await repo.git(['cat-file', '-p', kolkata.commit]);
    for (const who of ['author', 'committer']) {
      const date = new RegExp(`^${who} .* <.*> (\\d+) ([+-]\\d{4})$`, 'm').exec(raw);
      expect(date, raw).not.toBeNull();
      expect(Number(date![1])).toBeGreaterThanOrEqual(before);
      expect(Number(date![1])).toBeLessThanOrEqual(after);
      expect(date![2]).toBe('+0530');
    }
    // A zone whose offset changes in summer: as git itself writes the same instants.
    const newYork = await run('America/New_York');
    for (const [ours, instant] of [
      [newYork.winter, Date.UTC(2024, 0, 15, 12)],
      [newYork.summer, Date.UTC(2024, 6, 15, 12)],
    ] as const) {
      const git = (await runGit(repo.dir, ['var', 'GIT_AUTHOR_IDENT'], { env: { TZ: 'America/New_York', GIT_AUTHOR_DATE: `@${instant / 1000}` } })).trim();
      expect(git.endsWith(` ${ours}`), `${git} / ${ours}`).toBe(true);
    }
    expect(newYork.winter.endsWith('-0500') && newYork.summer.endsWith('-0400')).toBe(true);
  });

  it('leave a commit with another encoding to commit-tree, which writes its encoding header', async () => {
    const { repo, writer, head, tree } = await writerIn({ 'a.txt': 'a\n' });
    await repo.git(['config', 'i18n.commitEncoding', 'ISO-8859-1']);
    expect(await writer.write(tree, head, 'latin\n')).toBeNull();
    const blob = (await runGit(repo.dir, ['hash-object', '-w', '--stdin'], { input: 'b\n' })).trim();
    const ref = integrationRef('enc');
    const made = await integrate(repo.dir, ref, head, {
      tasks: [1],
      message: 'latin',
      trailers: [],
      works: [{ base: head, entries: [{ path: 'b.txt', mode: '100644', object: blob }] }],
    });
    expect(made.ok).toBe(true);
    expect(await repo.git(['cat-file', '-p', ref])).toMatch(/^encoding ISO-8859-1$/m);
  });

  it('end with the command line: its end closes the kept git processes and waits for them; a later commit starts one again', async () => {
    const { repo, head } = await writerIn({ 'a.txt': 'a\n' });
    const integrator = new Integrator(repo.dir);
    cleanups.push(async () => integrator.close());
    const blob = (await runGit(repo.dir, ['hash-object', '-w', '--stdin'], { input: 'b\n' })).trim();
    const work = (base: string, task: number) => ({
      tasks: [task],
      message: `task ${task}`,
      trailers: [],
      works: [{ base, entries: [{ path: `t${task}.txt`, mode: '100644', object: blob }] }],
    });
    const first = await integrator.integrate(null, head, work(head, 1));
    expect(first.ok).toBe(true);
    const kept = () => ['cat-file', 'mktree', 'hash-object'].flatMap((word) => childrenOf(process.pid, 'git', word));
    expect(kept().length).toBeGreaterThanOrEqual(3);
    await endGitSessions();
    expect(kept()).toEqual([]);
    const second = await integrator.integrate(null, head, work(head, 2));
    expect(second.ok).toBe(true);
  });
});
