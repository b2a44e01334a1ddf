// `execute --host URL` / `--hosts FILE`: a bad URL or hosts file is one line (exit 2); the dry
// run lists each host, its slots and the `.worktreeinclude` files it would get (only with
// include=1; a symbolic link named, not followed), as text and as events valid against the
// schema, with what the checks found of each ssh host; a run on `local?slots=N` places every
// attempt on one of this machine's slots, and says where in the journal; an ssh host that cannot
// be reached is left out, named, and with no host left the run is refused before anything starts.

import { readFileSync } from 'node:fs';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import type { DryRunEvent, RunEvent } from '../../src/core/report/events.ts';
import { runExecute } from '../support/execute.ts';
import { leftovers, repoWithPlan } from '../support/fake-run.ts';
import { fakeTask, makePlan } from '../support/plans.ts';

const schema = JSON.parse(readFileSync(new URL('../../schemas/event.schema.json', import.meta.url), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
const { repos } = leftovers();

const twoTasks = () =>
  makePlan([
    fakeTask('A', { create: ['a.txt'], fake: { write: { 'a.txt': 'a\n' } } }),
    fakeTask('B', { create: ['b.txt'], fake: { write: { 'b.txt': 'b\n' } } }),
  ]);

/** A repository whose `.worktreeinclude` lists `.env` and `secrets.json`, a symbolic link, both ignored. */
async function repoWithIncludes() {
  const setup = await repoWithPlan(twoTasks(), repos, {
    'README.md': 'hello\n',
    '.gitignore': '.env\nsecrets.json\n',
    '.worktreeinclude': '.env\nsecrets.json\n',
  });
  await writeFile(join(setup.repo.dir, '.env'), 'TOKEN=x\n');
  await symlink('/etc/hostname', join(setup.repo.dir, 'secrets.json'));
  return setup;
}

describe('execute --host', () => {
  it('refuses a bad URL, a bad hosts file and a --concurrency above the slots, in one line each (exit 2)', async () => {
    const { repo, env } = await repoWithPlan(twoTasks(), repos);
    const cases: Array<[string[], string]> = [
      [
        ['--host', 'ssh://h/w?slot=2'],
        'execute: --host "ssh://h/w?slot=2": unknown parameter "slot": did you mean slots? (one of slots, claude, node, git, include, name, free-mb) (see --help)',
      ],
      [
        ['--host', 'ssh://h'],
        'execute: --host "ssh://h": no work dir: give the absolute folder foreman works under on the host, ssh://host/srv/foreman (see --help)',
      ],
      [['--hosts', 'missing.txt'], 'execute: --hosts missing.txt: cannot read it (ENOENT) (see --help)'],
      [
        ['--host', 'local?slots=2', '--concurrency', '3'],
        "execute: --concurrency 3 is more than the hosts' 2 slots together: give a host more slots (slots=N), or a lower --concurrency (see --help)",
      ],
    ];
    for (const [args, line] of cases) {
      const r = await runExecute(repo.dir, ['--dry-run', ...args], env);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toBe(line);
    }
    await writeFile(join(repo.dir, 'hosts.txt'), '# farm\nssh://a/w?slots=2\nssh://a/w\n');
    const twice = await runExecute(repo.dir, ['--dry-run', '--hosts', 'hosts.txt'], env);
    expect(twice.exitCode).toBe(2);
    expect(twice.stderr).toContain('hosts.txt:3 "ssh://a/w": another host is already called a');
  });

  it('--dry-run lists each host, its slots and the .worktreeinclude files each would get, writing nothing', async () => {
    const { repo, planPath, env } = await repoWithIncludes();
    const before = await readFile(planPath, 'utf8');
    await writeFile(join(repo.dir, 'hosts.txt'), 'ssh://build@farm1:2222/srv/foreman?slots=3&include=1   # gets the .env\nssh://farm2/srv/f\n');
    const args = ['--dry-run', '--host', 'local?slots=1', '--hosts', 'hosts.txt'];
    const text = await runExecute(repo.dir, args, env);
    expect(text.stderr).toBe('');
    expect(text.exitCode).toBe(0);
    const lines = text.stdout.split('\n');
    const at = lines.findIndex((line) => line.startsWith('Hosts (--host)'));
    expect(lines.slice(at, at + 9)).toEqual([
      'Hosts (--host): 3 hosts, 8 slots; up to 8 workers at once (--concurrency)',
      '  local: 1 slot, this machine',
      '    .worktreeinclude files: copied here as in every worktree',
      '  build@farm1:2222: 3 slots, work dir /srv/foreman; claude claude, node node, git git',
      '    .worktreeinclude files sent (include=1): .env, secrets.json -> /etc/hostname (a symbolic link, sent as a link, not followed)',
      // Each ssh host is reached and checked (neither exists here): named with its reason and fix, and left out.
      expect.stringMatching(/^ {4}FAILED ssh: farm1 could not be reached \(.+\): check its name and port, that it is up and that sshd runs there$/),
      '  farm2: 4 slots, work dir /srv/f; claude claude, node node, git git',
      '    .worktreeinclude files: none sent (its URL has no include=1)',
      expect.stringMatching(/^ {4}FAILED ssh: farm2 could not be reached/),
    ]);

    const json = await runExecute(repo.dir, [...args, '--json', '--concurrency', '5'], env);
    expect(json.exitCode).toBe(0);
    const events = json.stdout.split('\n').map((line) => JSON.parse(line) as DryRunEvent);
    for (const event of events) expect(validate(event), `${JSON.stringify(event)}: ${JSON.stringify(validate.errors)}`).toBe(true);
    expect(events[0]).toMatchObject({ type: 'dry-run-plan', settings: { concurrency: 5 } });
    const hosts = events.flatMap((e) => (e.type === 'dry-run-host' ? [e] : []));
    // The link is named with its target, never followed (its target's content is nowhere).
    const included = [
      { path: '.env', link: null },
      { path: 'secrets.json', link: '/etc/hostname' },
    ];
    expect(hosts.map(({ runId: _r, at: _a, ...host }) => host)).toEqual([
      {
        type: 'dry-run-host',
        host: 'local',
        url: 'local?slots=1',
        kind: 'local',
        slots: 1,
        include: true,
        included,
      },
      {
        type: 'dry-run-host',
        host: 'build@farm1:2222',
        url: 'ssh://build@farm1:2222/srv/foreman?slots=3&include=1',
        kind: 'ssh',
        slots: 3,
        workDir: '/srv/foreman',
        programs: { claude: 'claude', node: 'node', git: 'git' },
        include: true,
        included,
        checks: [{ check: 'ssh', passed: false, found: expect.stringContaining('farm1 could not be reached'), fix: null }],
      },
      {
        type: 'dry-run-host',
        host: 'farm2',
        url: 'ssh://farm2/srv/f',
        kind: 'ssh',
        slots: 4,
        workDir: '/srv/f',
        programs: { claude: 'claude', node: 'node', git: 'git' },
        include: false,
        included: [],
        checks: [{ check: 'ssh', passed: false, found: expect.stringContaining('farm2 could not be reached'), fix: null }],
      },
    ]);
    // The hosts come right after the plan and its settings.
    expect(events.slice(1, 4).map((e) => e.type)).toEqual(['dry-run-host', 'dry-run-host', 'dry-run-host']);
    expect(await readFile(planPath, 'utf8')).toBe(before);
  });

  it('runs on local?slots=N: every attempt on one of its slots, said in the journal; an ssh host that cannot be reached is left out, and with none left the run is refused before anything starts', async () => {
    const { repo, planPath, env } = await repoWithPlan(twoTasks(), repos);
    const before = await readFile(planPath, 'utf8');
    const refused = await runExecute(repo.dir, ['--host', 'ssh://farm1/srv/f'], env);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toMatch(/^host farm1 is left out of the run: farm1 could not be reached \(.+\): check its name and port/);
    expect(refused.stderr).toContain('no host is left to run the plan on: fix one of them, or add local?slots=N to run here');
    expect(await readFile(planPath, 'utf8')).toBe(before);

    const r = await runExecute(repo.dir, ['--host', 'local?slots=1', '--host', 'ssh://farm1/srv/f', '--json'], env);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const events = r.stdout.split('\n').map((line) => JSON.parse(line) as RunEvent);
    expect(events.find((e) => e.type === 'notice' && e.message.startsWith('host farm1 is left out of the run: farm1 could not be reached'))).toBeDefined();
    expect(events.find((e) => e.type === 'run-started')).toMatchObject({ concurrency: 1 });
    const starts = events.flatMap((e) => (e.type === 'task-started' ? [e] : []));
    expect(starts.map((e) => [e.task, e.host, e.slot])).toEqual([
      [0, 'local', 1],
      [1, 'local', 1],
    ]);
    // One slot: the second started after the first finished.
    const finishedFirst = events.findIndex((e) => e.type === 'task-finished' && e.task === 0);
    expect(events.indexOf(starts[1]!)).toBeGreaterThan(finishedFirst);
    for (const event of events) expect(validate(event), `${JSON.stringify(event)}: ${JSON.stringify(validate.errors)}`).toBe(true);
    expect(await repo.git(['log', '--format=%s', '-1'])).not.toBe('');
  });
});
