// A plan's attempts on ssh hosts, end to end: real OpenSSH (test/support/sshd.ts, two sshd on
// 127.0.0.1, key login only), the real Claude Code CLI on each "host" reaching the scripted model
// server through the host's own environment (sshd's SetEnv: foreman sends none), foreman's
// integration, gate and landing here. The work lands whole and byte for byte, every worker ran in
// a host's work dir; shell metacharacters in a task travel as data; the worker sandboxed there;
// .worktreeinclude files only with include=1; a host without claude, with a full work dir, an
// unknown host key or a work dir too long for the sandbox is named at --dry-run and left out; a
// crashing worker is a crashed worker; git failing on a host, its sshd killed mid-run or foreman
// killed -9 lose no attempt, and the run (or the same command again) finishes the plan; a host
// logged in to another account has a limiter of its own: its usage limit holds only its slots.

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { execa } from 'execa';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLock } from '../../src/adapters/store/run-lock.ts';
import { sandboxSupport } from '../../src/adapters/sandbox/sandbox.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { repositoryId } from '../../src/run/workspace/host-scripts.ts';
import { openChannel } from '../../src/adapters/host/channel.ts';
import { sshTransport } from '../../src/adapters/host/ssh.ts';
import { executeScript, nodeArgsFor, runExecute, runPlanTool } from '../support/execute.ts';
import { waitFor } from '../support/wait.ts';
import { tempGitRepo, type TempGitRepo } from '../support/git-repo.ts';
import { httpError, type ModelServer, scenario, type ScriptedRequest, startModelServer, text, toolUse } from '../support/model-server.ts';
import { makePlan, writePlan } from '../support/plans.ts';
import { claudeBin, claudeEnv, gatewayToken, tempHome } from '../support/real-claude.ts';
import { alive, childrenOf } from '../support/processes.ts';
import { sshdMissing, startTestSshd, type TestSshd } from '../support/sshd.ts';

const describeSshd = sshdMissing === null ? describe : describe.skip;
if (sshdMissing !== null) console.warn(`hosts-real.test.ts skips: ${sshdMissing}`);

/** A file name and content full of what a shell would read: quotes, $, backticks, ;, &, |, spaces, a newline-free glob. */
const WEIRD_FILE = `odd dir/it's $HOME & \`id\`; rm -rf x | *.txt`;
const WEIRD_CONTENT = `"quoted" 'single' $(echo no) \`no\` ; & | > < end\n`;

/** A file outside every work dir that a sandboxed worker on a host must not be able to write. */
const ESCAPE = join(tmpdir(), `foreman-host-sandbox-escape-${process.pid}`);

/** Per task marker, the working directory of every worker the model server heard from. */
const cwds = new Map<string, string[]>();
/** What the running test does at each worker's first turn, before it answers (null: nothing). */
let atFirstTurn: ((marker: string, cwd: string) => Promise<void>) | null = null;

const writeFileTurn = (marker: string, file: string, content: string) => async (req: ScriptedRequest) => {
  cwds.set(marker, [...(cwds.get(marker) ?? []), req.cwd ?? '?']);
  await atFirstTurn?.(marker, req.cwd ?? '?');
  return [toolUse('Write', { file_path: join(req.cwd ?? '.', file), content })];
};

/** The processes whose working directory is in one of `dirs` (the hosts' work dirs): what a run left running there. */
function processesIn(dirs: readonly string[]): number[] {
  return readdirSync('/proc').flatMap((name) => {
    if (!/^\d+$/.test(name)) return [];
    try {
      const cwd = readlinkSync(`/proc/${name}/cwd`);
      return dirs.some((dir) => cwd === dir || cwd.startsWith(`${dir}/`)) ? [Number(name)] : [];
    } catch {
      return [];
    }
  });
}

/** Holds each worker's first turn until `count` workers are running at once (or `timeoutMs` passed): every slot of both hosts in use. */
function firstArrivals(count: number, timeoutMs: number): (marker: string) => Promise<void> {
  const arrived = new Set<string>();
  let release!: () => void;
  const everyone = new Promise<void>((resolve) => (release = resolve));
  return async (marker) => {
    arrived.add(marker);
    if (arrived.size >= count) release();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([everyone, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  };
}

const MARKERS = Array.from({ length: 8 }, (_, index) => `host-task-${index}`);

/** Tasks whose workers the API refuses with the account's usage limit when they come signed in as another account (a bearer token). */
const ACCOUNT_MARKERS = Array.from({ length: 4 }, (_, index) => `account-task-${index}`);
/** Where each account task's requests came from, and whether they were refused. */
const accountRequests: Array<{ marker: string; cwd: string; refused: boolean }> = [];
/** When the other account's usage limit resets (epoch s): hours away, longer than the run's --limit-wait. */
const OTHER_RESETS_AT = Math.floor(Date.now() / 1000) + 3 * 3600;

let server: ModelServer;
let sshd: TestSshd;
let configDir: string;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  if (sshdMissing !== null) return;
  server = await startModelServer({
    scenarios: [
      ...MARKERS.map((marker, index) =>
        scenario({
          match: `TASK-MARKER: ${marker}`,
          turns: [writeFileTurn(marker, `out/${index}.txt`, `content of task ${index}\n`), [text(`COMPLETED: out/${index}.txt written`)]],
        }),
      ),
      scenario({
        match: 'TASK-MARKER: include',
        turns: [
          (req: ScriptedRequest) => [toolUse('Read', { file_path: join(req.cwd ?? '.', '.env') })],
          (req: ScriptedRequest) => {
            const read = req.toolResults[0];
            const seen =
              read === undefined || read.is_error === true || !read.content.includes('TOKEN=from-this-machine') ? 'absent\n' : 'TOKEN=from-this-machine\n';
            return [toolUse('Write', { file_path: join(req.cwd ?? '.', 'out/env.txt'), content: seen })];
          },
          [text('COMPLETED: out/env.txt says what .env held')],
        ],
      }),
      scenario({
        match: 'TASK-MARKER: sandboxed',
        turns: [
          // Inside its slot and its own TMPDIR it writes; outside the work dir the sandbox refuses it.
          () => [
            toolUse('Bash', {
              command: `mkdir -p out && echo in-slot > out/sandboxed.txt && echo t > "$TMPDIR/t" && echo tmpdir-ok >> out/sandboxed.txt; (echo x > ${ESCAPE}) 2>/dev/null || echo outside-refused >> out/sandboxed.txt`,
            }),
          ],
          [text('COMPLETED: out/sandboxed.txt written')],
        ],
      }),
      scenario({ match: 'TASK-MARKER: weird', turns: [writeFileTurn('weird', WEIRD_FILE, WEIRD_CONTENT), [text('COMPLETED: the odd file is written')]] }),
      ...ACCOUNT_MARKERS.map((marker, index) =>
        scenario({
          match: `TASK-MARKER: ${marker}`,
          turns: [
            (req: ScriptedRequest) => {
              // The other account (its CLI signed in with a token, not this machine's API key) has reached its usage limit.
              const refused = String(req.headers.authorization ?? '').startsWith('Bearer ');
              accountRequests.push({ marker, cwd: req.cwd ?? '?', refused });
              if (refused)
                return httpError(429, {
                  message: "This request would exceed your account's rate limit.",
                  headers: {
                    'retry-after': String(3 * 3600),
                    'anthropic-ratelimit-unified-status': 'rejected',
                    'anthropic-ratelimit-unified-reset': String(OTHER_RESETS_AT),
                    'anthropic-ratelimit-unified-representative-claim': 'five_hour',
                  },
                });
              return [toolUse('Write', { file_path: join(req.cwd ?? '.', `account/${index}.txt`), content: `account task ${index}\n` })];
            },
            [text(`COMPLETED: account/${index}.txt written`)],
          ],
        }),
      ),
    ],
  });
  // The hosts' own claude configuration: where it reaches the API, a config folder of its own.
  configDir = await mkdtemp(join(tmpdir(), 'foreman-host-claude-'));
  const hostEnv = claudeEnv(server.url, configDir);
  const setEnv: Record<string, string> = { CLAUDE_CONFIG_DIR: configDir };
  for (const [name, value] of Object.entries(hostEnv))
    if (value !== undefined && (name.startsWith('ANTHROPIC_') || name.startsWith('CLAUDE_CODE_') || name.startsWith('DISABLE_') || name === 'NO_PROXY'))
      setEnv[name] = value;
  sshd = await startTestSshd(2, setEnv);
});

afterAll(async () => {
  await sshd?.stop();
  await server?.close();
  for (const cleanup of cleanups) await cleanup();
  if (configDir) await rm(configDir, { recursive: true, force: true });
});

/** foreman's environment: its own claude reaching the server (the probe and gate need none), ssh through the test's client config, no key of the person's sent. */
async function repoWith(plan: Plan, files: Record<string, string> = {}): Promise<{ repo: TempGitRepo; env: Record<string, string | undefined> }> {
  const repo = await tempGitRepo({ 'README.md': '# sample\n', ...files });
  const home = await tempHome();
  cleanups.push(repo.cleanup, () => rm(home, { recursive: true, force: true }));
  await writePlan(repo.dir, plan);
  const env = { ...claudeEnv(server.url, home), PATH: sshd.env.PATH };
  return { repo, env };
}

const hostUrl = (index: number, extra = '', slots = 2) => {
  const host = sshd.hosts[index]!;
  return `ssh://${host.alias}${host.workDir}?slots=${slots}&claude=${claudeBin}${extra}`;
};

const task = (marker: string, create: string[]) => ({
  subject: `task ${marker}`,
  prompt: `Write the file.\nTASK-MARKER: ${marker}`,
  blockedBy: [],
  metadata: { files: { create, modify: [] } },
  agent: { model: 'haiku' },
});

const eventsOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map(
      (line) =>
        JSON.parse(line) as {
          type: string;
          level?: string;
          task?: number;
          outcome?: string;
          reason?: string;
          host?: string;
          message?: string;
          lost?: number[];
        },
    );

describeSshd('a plan over two ssh hosts, with the real Claude Code CLI on each', () => {
  it('lands whole and byte for byte; every worker ran in a host’s work dir', async () => {
    cwds.clear();
    atFirstTurn = firstArrivals(4, 30_000);
    const plan = makePlan(MARKERS.map((marker, index) => task(marker, [`out/${index}.txt`])));
    const { repo, env } = await repoWith(plan);
    // What a killed run of another plan of this repository left on host a, held by no live process: the run cleans it.
    const stale = join(sshd.hosts[0]!.workDir, repositoryId(repo.dir), 'plan-killed-earlier');
    await mkdir(join(stale, 'repository.git'), { recursive: true });
    await writeFile(join(stale, 'lock'), '999999999 0\n');
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--host', hostUrl(0), '--host', hostUrl(1)], env);
    expect(existsSync(stale)).toBe(false);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    for (const [index] of MARKERS.entries()) expect(await readFile(join(repo.dir, `out/${index}.txt`), 'utf8')).toBe(`content of task ${index}\n`);
    expect(await repo.git(['status', '--porcelain', '--', '.', ':!.design'])).toBe('');
    const workDirs = await Promise.all(sshd.hosts.map((host) => realpath(host.workDir)));
    const used = new Set<number>();
    for (const marker of MARKERS) {
      const dirs = cwds.get(marker) ?? [];
      expect(dirs.length, `${marker} ran in ${dirs.join(', ')}`).toBe(1);
      const on = workDirs.findIndex((dir) => dirs[0]!.startsWith(`${dir}/`));
      expect(on, `${marker} ran in ${dirs[0]}`).toBeGreaterThanOrEqual(0);
      used.add(on);
    }
    expect(used.size).toBe(2);
    const finished = eventsOf(r.stdout).filter((event) => event.type === 'task-finished');
    expect(
      finished.map((event) => event.outcome),
      JSON.stringify(finished),
    ).toEqual(MARKERS.map(() => 'completed'));
  });

  it('a task whose file name, content and prompt hold shell metacharacters travels as data', async () => {
    cwds.clear();
    atFirstTurn = null;
    const plan = makePlan([{ ...task('weird', [WEIRD_FILE]), subject: `the "odd" task; $(true) & \`x\`` }]);
    const { repo, env } = await repoWith(plan);
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--host', hostUrl(0)], env);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(await readFile(join(repo.dir, WEIRD_FILE), 'utf8')).toBe(WEIRD_CONTENT);
    expect(existsSync(join(repo.dir, 'x'))).toBe(false);
  });

  it('--sandbox on: the worker on a host runs in Claude Code’s sandbox there: it writes in its slot and its own TMPDIR, nothing outside', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    atFirstTurn = null;
    const plan = makePlan([task('sandboxed', ['out/sandboxed.txt'])]);
    const { repo, env } = await repoWith(plan);
    const r = await runExecute(
      repo.dir,
      ['--claude-bin', claudeBin, '--json', '--sandbox', 'on', '--allowed-tools', 'Bash,Read,Write', '--host', hostUrl(0)],
      env,
    );
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(await readFile(join(repo.dir, 'out/sandboxed.txt'), 'utf8')).toBe('in-slot\ntmpdir-ok\noutside-refused\n');
    // The setup command and the checks are sandboxed there too: nothing to warn of.
    expect(eventsOf(r.stdout).filter((event) => event.type === 'notice' && event.level === 'warning')).toEqual([]);
    expect(existsSync(ESCAPE)).toBe(false);
    // Its own TMPDIR there is gone with it.
    expect(readdirSync(join(sshd.hosts[0]!.workDir, '.t'))).toEqual([]);
  });

  it('--sandbox on: the setup command and the checks on a host run in the operating-system sandbox there: they write in the slot, nothing outside', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    cwds.clear();
    atFirstTurn = null;
    const workDir = sshd.hosts[0]!.workDir;
    const escapes = {
      setupWorkDir: join(workDir, `setup-escape-${process.pid}`),
      setupHome: join(userInfo().homedir, `foreman-host-setup-escape-${process.pid}`),
      checkWorkDir: join(workDir, `check-escape-${process.pid}`),
      checkHome: join(userInfo().homedir, `foreman-host-check-escape-${process.pid}`),
    };
    cleanups.push(async () => {
      for (const file of Object.values(escapes)) await rm(file, { force: true });
    });
    // The setup command passes only when it can write in its slot and both writes outside it are refused.
    const refusedWrite = (file: string) => `! (echo x > '${file}') 2>/dev/null`;
    const setupCommand = `echo in > setup-probe && test -s setup-probe && rm setup-probe && ${refusedWrite(escapes.setupWorkDir)} && ${refusedWrite(escapes.setupHome)}`;
    const withChecks = (marker: string, index: number, check: string) => ({
      ...task(marker, [`out/${index}.txt`]),
      agent: { model: 'haiku', acceptanceCriteria: [{ criterion: 'its check passes', check }] },
    });
    const plan = makePlan(
      [
        // It writes in its slot, and is kept from Unix sockets (the seccomp helper foreman sent there): socket() itself is refused.
        withChecks(
          MARKERS[0]!,
          0,
          `echo in > check-probe && test -s check-probe && rm check-probe && test -s out/0.txt && socat -u OPEN:/dev/null UNIX-CONNECT:"$TMPDIR/none.sock" 2>&1 | grep -q 'socket(.*): Operation not permitted'`,
        ),
        withChecks(MARKERS[1]!, 1, `echo x > '${escapes.checkWorkDir}'`),
        withChecks(MARKERS[2]!, 2, `echo x > "$HOME/foreman-host-check-escape-${process.pid}"`),
      ],
      { context: { setupCommand } },
    );
    const { repo, env } = await repoWith(plan);
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--sandbox', 'on', '--max-attempts', '1', '--host', hostUrl(0)], env);
    const events = eventsOf(r.stdout);
    const outcomes = events.filter((event) => event.type === 'task-finished').map((event) => [event.task, event.outcome]);
    expect(outcomes.sort(), r.stdout).toEqual([
      [0, 'completed'],
      [1, 'failed'],
      [2, 'failed'],
    ]);
    expect(await readFile(join(repo.dir, 'out/0.txt'), 'utf8')).toBe('content of task 0\n');
    // The checks that wrote outside failed as the sandbox refused them.
    for (const failed of events.filter((event) => event.type === 'task-finished' && event.outcome === 'failed'))
      expect(failed.reason, JSON.stringify(failed)).toMatch(/cannot create .*-escape-\d+: Read-only file system/);
    for (const [name, file] of Object.entries(escapes)) expect(existsSync(file), name).toBe(false);
    // Every worker ran on the host, provisioned there by the sandboxed setup command.
    for (const marker of MARKERS.slice(0, 3)) expect(cwds.get(marker)?.[0]?.startsWith(`${await realpath(workDir)}/`), marker).toBe(true);
    // The seccomp helper is kept beside the program there, private.
    const programs = readdirSync(join(workDir, '.foreman'));
    const helpers = programs.map((version) => join(workDir, '.foreman', version, 'vendor', 'seccomp', process.arch, 'apply-seccomp')).filter(existsSync);
    expect(helpers.length, programs.join(', ')).toBe(1);
    expect(statSync(helpers[0]!).mode & 0o777).toBe(0o700);
    // The checks' own TMPDIRs there, and its sandbox hosts' one, are gone once the remote side ended.
    await waitFor('the sandboxed commands’ folders gone from the work dir', () => readdirSync(join(workDir, '.t')).length === 0);
  });

  it('--sandbox on: a work dir too long for a sandboxed worker’s sockets is named at --dry-run and left out', async (context) => {
    if (!(await sandboxSupport()).ok) context.skip();
    const plan = makePlan([task(MARKERS[0]!, ['out/0.txt'])]);
    const { repo, env } = await repoWith(plan);
    const long = `${sshd.hosts[0]!.workDir}/a-folder-that-makes-the-path-too-long`;
    const url = `ssh://${sshd.hosts[0]!.alias}${long}?slots=1&claude=${claudeBin}`;
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--dry-run', '--sandbox', 'on', '--host', url], env);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain(
      `the work dir's path is ${Buffer.byteLength(long)} bytes, longer than the 59 under which a sandboxed worker's sockets fit (a socket's path may not pass 107 bytes): choose a shorter work dir, or run with --sandbox off`,
    );
    expect(existsSync(long)).toBe(false);
  });

  it('.worktreeinclude files go only to a host whose URL says include=1', async () => {
    atFirstTurn = null;
    for (const [include, expected] of [
      ['&include=1', 'TOKEN=from-this-machine\n'],
      ['', 'absent\n'],
    ] as const) {
      const plan = makePlan([task('include', ['out/env.txt'])]);
      const { repo, env } = await repoWith(plan, { '.gitignore': '.env\n', '.worktreeinclude': '.env\n' });
      await writeFile(join(repo.dir, '.env'), 'TOKEN=from-this-machine\n');
      const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--host', hostUrl(0, include)], env);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      expect(await readFile(join(repo.dir, 'out/env.txt'), 'utf8'), include || 'without include=1').toBe(expected);
    }
  });

  it('a host without claude, a full work dir or an unknown host key is named at --dry-run, with its fix, and left out', async () => {
    const plan = makePlan([task(MARKERS[0]!, ['out/0.txt'])]);
    const { repo, env } = await repoWith(plan);
    // A work dir no run has made: the dry run writes nothing there, not even foreman's program.
    const fresh = `${sshd.hosts[1]!.workDir}-dry-run`;
    const missing = `ssh://${sshd.hosts[1]!.alias}${fresh}?slots=2&claude=/nowhere/claude`;
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--dry-run', '--sandbox', 'off', '--host', hostUrl(0), '--host', missing], env);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('FAILED claude: the claude binary (/nowhere/claude) is not on the PATH of an ssh command there');
    expect(r.stdout).toContain("name it with the URL's claude= parameter");
    // A work dir without the free space the URL asks for (free-mb) is named too.
    const full = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--dry-run', '--sandbox', 'off', '--host', hostUrl(0, '&free-mb=1048576')], env);
    expect(full.exitCode).toBe(3);
    expect(full.stderr).toMatch(/the work dir has [\d.]+ GiB free \(.+\), under the [\d.]+ GiB a run needs: free space there or choose another work dir/);
    expect(existsSync(fresh)).toBe(false);
    // Reached by its address, not the alias whose known_hosts holds its key: ssh refuses the unknown key (BatchMode), and foreman never accepts one.
    const unknownKey = `ssh://127.0.0.1:${sshd.hosts[0]!.port}${sshd.hosts[0]!.workDir}?slots=1&claude=${claudeBin}`;
    const refused = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--dry-run', '--sandbox', 'off', '--host', unknownKey], env);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toContain("127.0.0.1's host key is not in your known_hosts, and foreman never accepts one by itself");
    const alone = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--dry-run', '--sandbox', 'off', '--host', missing], env);
    expect(alone.exitCode).toBe(3);
    expect(alone.stderr).toContain(`host ${sshd.hosts[1]!.alias} is left out of the run: the claude binary (/nowhere/claude)`);
  });

  it('plan clean --host removes the plan’s run folders no live process holds, per host, and names a host it cannot reach (exit 75)', async () => {
    const { repo, env } = await repoWith(makePlan([task('clean', ['out/clean.txt'])], { planId: 'plan-now' }));
    await mkdir(join(repo.dir, '.design', 'history'), { recursive: true });
    await writePlan(
      repo.dir,
      makePlan([task('before', ['out/before.txt'])], { planId: 'plan-before' }),
      join('.design', 'history', '20250101T000000Z-plan.json'),
    );
    const under = join(sshd.hosts[0]!.workDir, repositoryId(repo.dir));
    // The plan's folder a killed run left, another plan's (not this one's: it stays), and the archived plan's, which a live run holds.
    for (const plan of ['plan-now', 'plan-other']) {
      await mkdir(join(under, plan, 'repository.git'), { recursive: true });
      await writeFile(join(under, plan, 'lock'), '999999999 0\n');
    }
    const opened = await openChannel(sshTransport(sshd.hosts[0]!.host, sshd.env), { keep: true });
    if (!opened.ok) throw new Error(opened.error.message);
    const holder = opened.value;
    try {
      const held = await holder.request({ op: 'open-run', repository: repositoryId(repo.dir), plan: 'plan-before', objectFormat: 'sha1' });
      expect(held.ok).toBe(true);
      const unreachable = 'ssh://127.0.0.1:1/srv/nowhere?name=gone';
      const r = await runPlanTool(repo.dir, ['clean', '--host', hostUrl(0), '--host', hostUrl(1), '--host', unreachable], env);
      expect(r.stderr).toBe('');
      const a = sshd.hosts[0]!.alias;
      const b = sshd.hosts[1]!.alias;
      expect(r.stdout.split('\n').filter((line) => line.startsWith('host '))).toEqual([
        `host ${a}: removed ${join(under, 'plan-now')}`,
        `host ${a}: kept ${join(under, 'plan-before')}: a live run holds it`,
        `host ${b}: no run folder of the plan there`,
        expect.stringMatching(/^host gone: not cleaned: 127\.0\.0\.1 could not be reached \(.+\): .+; run the same command again once it answers$/),
      ]);
      expect(r.exitCode).toBe(75);
      expect(existsSync(join(under, 'plan-now'))).toBe(false);
      expect(existsSync(join(under, 'plan-other'))).toBe(true);
      expect(existsSync(join(under, 'plan-before', 'repository.git'))).toBe(true);
      await holder.close();
      await waitFor('the archived plan’s run to end on the host', () => !alive(holder.hello.pid));
      // Its run gone, the archived plan's folder goes too; with every host reached, exit 0.
      const again = await runPlanTool(repo.dir, ['clean', '--json', '--host', hostUrl(0)], env);
      expect(again.exitCode).toBe(0);
      expect(JSON.parse(again.stdout).hosts).toEqual([{ host: a, removed: [join(under, 'plan-before')], held: [] }]);
      expect(existsSync(join(under, 'plan-other'))).toBe(true);
    } finally {
      await holder.close();
    }
  });

  it('a run that fails once its hosts are checked, before it starts, closes their channels and lets go of the plan', async () => {
    const { repo, env } = await repoWith(makePlan([task('never', ['out/never.txt'])]));
    // The journal cannot be opened (a folder where its file goes): the run throws as it says the host left out, before it starts.
    await mkdir(join(repo.dir, '.design', 'events.jsonl'));
    const r = await runExecute(
      repo.dir,
      ['--claude-bin', claudeBin, '--sandbox', 'off', '--host', hostUrl(0), '--host', 'ssh://127.0.0.1:1/srv/nowhere?name=gone'],
      env,
    );
    expect(r.stderr).toContain('EISDIR');
    expect(r.exitCode).toBe(70);
    expect(childrenOf(process.pid, 'ssh', '-o', 'BatchMode=yes')).toEqual([]);
    expect((await readLock(join(repo.dir, '.design', 'plan.json'))).state).toBe('free');
  });

  it('a worker that crashes on a host whose remote side lives is a crashed worker, not a host fault', async () => {
    const plan = makePlan([task(MARKERS[0]!, ['out/0.txt'])]);
    const { repo, env } = await repoWith(plan);
    const crashing = `ssh://${sshd.hosts[0]!.alias}${sshd.hosts[0]!.workDir}?slots=1&claude=/bin/false`;
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--max-attempts', '1', '--host', crashing], env);
    expect(r.exitCode).toBe(1);
    const events = eventsOf(r.stdout);
    expect(events.filter((event) => event.type === 'task-finished').map((event) => event.outcome)).toEqual(['failed']);
    expect(events.some((event) => event.type === 'host-down')).toBe(false);
  });

  it('git failing on a host is a host fault: its attempt lost with none spent, the host down, the run finished on the other', async () => {
    cwds.clear();
    atFirstTurn = null;
    // Host b's git (its URL's git=) answers the checks and takes the objects, but cannot make a worktree.
    const broken = join(configDir, 'broken-git');
    await writeFile(broken, '#!/bin/sh\ncase "$*" in *"worktree add"*) echo "fatal: simulated failure" >&2; exit 128;; esac\nexec git "$@"\n', { mode: 0o755 });
    const tasks = MARKERS.slice(0, 2);
    const plan = makePlan(tasks.map((marker, index) => task(marker, [`out/${index}.txt`])));
    const { repo, env } = await repoWith(plan);
    const r = await runExecute(
      repo.dir,
      ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--host', hostUrl(0, '', 1), '--host', hostUrl(1, `&git=${broken}`, 1)],
      env,
    );
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    for (const [index] of tasks.entries()) expect(await readFile(join(repo.dir, `out/${index}.txt`), 'utf8')).toBe(`content of task ${index}\n`);
    const events = eventsOf(r.stdout) as Array<{ type: string; attempt?: number; host?: string; reason?: string; lost?: number[] }>;
    const down = events.find((event) => event.type === 'host-down');
    expect(down?.host).toBe(sshd.hosts[1]!.alias);
    expect(down?.reason).toContain('fatal: simulated failure');
    expect(down?.lost?.length).toBe(1);
    expect(events.filter((event) => event.type === 'task-started').every((event) => event.attempt === 1)).toBe(true);
    const workDirA = await realpath(sshd.hosts[0]!.workDir);
    for (const marker of tasks)
      expect(
        cwds.get(marker)?.every((cwd) => cwd.startsWith(`${workDirA}/`)),
        marker,
      ).toBe(true);
  });

  it('foreman killed -9 mid-run: nothing of it runs on the hosts soon after, and the same command finishes the plan', async () => {
    cwds.clear();
    const tasks = MARKERS.slice(0, 4);
    const plan = makePlan(tasks.map((marker, index) => task(marker, [`out/${index}.txt`])));
    const { repo, env } = await repoWith(plan);
    const args = ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--host', hostUrl(0), '--host', hostUrl(1)];
    const child = execa('node', [...nodeArgsFor(executeScript), ...args], { cwd: repo.dir, reject: false, stdin: 'ignore', env: { ...env, NO_COLOR: '1' } });
    let killed = false;
    // The first worker to reach the API kills foreman; the workers' turns wait until it is gone.
    atFirstTurn = async () => {
      if (!killed) {
        killed = true;
        child.kill('SIGKILL');
      }
      await child;
    };
    const first = await child;
    atFirstTurn = null;
    expect(first.signal).toBe('SIGKILL');
    const workDirs = await Promise.all(sshd.hosts.map((host) => realpath(host.workDir)));
    // Its ssh connections' input ended with it: each remote side ends what it started, long before the silence limit.
    await waitFor('nothing of the killed run left on the hosts', () => processesIn(workDirs).length === 0);
    // A remote program killed outright (the OOM killer) leaves its temporary folders: the next run removes them.
    const goneProgram = `${Number(spawnSync('/bin/sh', ['-c', 'echo $$']).stdout.toString().trim()).toString(36)}-0`;
    for (const workDir of workDirs) await mkdir(join(workDir, '.t', goneProgram, 'left'), { recursive: true });
    const again = await runExecute(repo.dir, args, env);
    expect(again.stderr).toBe('');
    expect(again.exitCode).toBe(0);
    for (const [index] of tasks.entries()) expect(await readFile(join(repo.dir, `out/${index}.txt`), 'utf8')).toBe(`content of task ${index}\n`);
    for (const workDir of workDirs) expect(existsSync(join(workDir, '.t', goneProgram))).toBe(false);
  });

  // Last: host b's sshd does not come back.
  it('a host logged in to another account has its own limiter: its usage limit holds only its slots, and its tasks finish on the other host, no attempt spent', async () => {
    cwds.clear();
    accountRequests.length = 0;
    const [a, b] = sshd.hosts as [TestSshd['hosts'][0], TestSshd['hosts'][0]];
    // Host b's claude: its `auth status` names another account than this machine's (whose API key names none), and its
    // workers reach the API as that account (a gateway's token, so the CLI reads the account's usage limit headers).
    const otherAccount = join(configDir, 'other-account-claude');
    const status = JSON.stringify({
      loggedIn: true,
      authMethod: 'claude.ai',
      apiProvider: 'firstParty',
      email: 'other@example.com',
      orgId: 'org-other',
      orgName: 'Other Org',
    });
    await writeFile(
      otherAccount,
      `#!/bin/sh\nif [ "$1" = auth ] && [ "$2" = status ]; then printf '%s\\n' '${status}'; exit 0; fi\nunset ANTHROPIC_API_KEY\nANTHROPIC_AUTH_TOKEN='${gatewayToken()}' exec '${claudeBin}' "$@"\n`,
      { mode: 0o755 },
    );
    const plan = makePlan(ACCOUNT_MARKERS.map((marker, index) => task(marker, [`account/${index}.txt`])));
    const { repo, env } = await repoWith(plan);
    const hostB = `ssh://${b.alias}${b.workDir}?slots=2&claude=${otherAccount}`;
    // The dry run names b's account.
    const dry = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--dry-run', '--sandbox', 'off', '--host', hostUrl(0), '--host', hostB], env);
    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain('logged in (claude.ai: other@example.com of Other Org)');
    // b's account's limit resets in hours, past --limit-wait: the run does not wait for it, and goes on on a.
    const r = await runExecute(
      repo.dir,
      ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--limit-wait', '60', '--host', hostUrl(0), '--host', hostB],
      env,
    );
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    for (const [index] of ACCOUNT_MARKERS.entries()) expect(await readFile(join(repo.dir, `account/${index}.txt`), 'utf8')).toBe(`account task ${index}\n`);
    const events = eventsOf(r.stdout) as Array<{
      type: string;
      attempt?: number;
      outcome?: string;
      host?: string;
      hosts?: string[];
      limit?: string;
      message?: string;
    }>;
    // b's workers were refused (both its slots took a task at the start), a's never.
    const workDirA = await realpath(a.workDir);
    const workDirB = await realpath(b.workDir);
    const refused = accountRequests.filter((request) => request.refused);
    expect(refused.length).toBeGreaterThan(0);
    for (const request of refused) expect(request.cwd.startsWith(`${workDirB}/`), request.cwd).toBe(true);
    for (const request of accountRequests.filter((request) => !request.refused)) expect(request.cwd.startsWith(`${workDirA}/`), request.cwd).toBe(true);
    // The hold is b's account's, and named so: nothing of a's account was held or lowered.
    const limits = events.filter((event) => event.type === 'limit');
    expect(limits.length).toBeGreaterThan(0);
    for (const limit of limits) expect(limit.hosts).toEqual([b.alias]);
    expect(limits.find((limit) => limit.limit === 'usage-limit')?.message).toContain(`the account of ${b.alias} (not this machine's)`);
    // No attempt spent: every start is a first attempt, and every task completed.
    expect(events.filter((event) => event.type === 'task-started').every((event) => event.attempt === 1)).toBe(true);
    expect(events.filter((event) => event.type === 'task-finished' && event.outcome === 'completed').length).toBe(4);
    expect(events.some((event) => event.type === 'host-down')).toBe(false);
  });

  it('one host’s sshd and its sessions killed mid-run: its tasks finish on the other, no attempt spent', async () => {
    cwds.clear();
    const [a, b] = sshd.hosts as [TestSshd['hosts'][0], TestSshd['hosts'][0]];
    const workDirB = await realpath(b.workDir).catch(() => b.workDir);
    const meet = firstArrivals(4, 30_000);
    let killed = false;
    atFirstTurn = async (marker, cwd) => {
      await meet(marker);
      if (killed || !cwd.startsWith(`${workDirB}/`)) return;
      killed = true;
      // sshd and every session it forked (the ssh channel's, whose remote program then ends what it started).
      const sessions = childrenOf(b.sshd.pid as number);
      b.sshd.kill('SIGKILL');
      for (const pid of sessions) process.kill(pid, 'SIGKILL');
    };
    const tasks = MARKERS.slice(0, 4);
    const plan = makePlan(tasks.map((marker, index) => task(marker, [`out/${index}.txt`])));
    const { repo, env } = await repoWith(plan);
    const r = await runExecute(repo.dir, ['--claude-bin', claudeBin, '--json', '--sandbox', 'off', '--host', hostUrl(0), '--host', hostUrl(1)], env);
    atFirstTurn = null;
    expect(killed).toBe(true);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    for (const [index] of tasks.entries()) expect(await readFile(join(repo.dir, `out/${index}.txt`), 'utf8')).toBe(`content of task ${index}\n`);
    const events = eventsOf(r.stdout) as Array<{
      type: string;
      task?: number;
      attempt?: number;
      outcome?: string;
      host?: string;
      lost?: number[];
      reason?: string;
    }>;
    const down = events.find((event) => event.type === 'host-down');
    expect(down?.host, JSON.stringify(events.filter((event) => event.type === 'host-down'))).toBe(b.alias);
    expect(down?.lost?.length).toBeGreaterThan(0);
    // No attempt spent: every task's every start is its first attempt; the lost ones went back and finished on host a.
    expect(events.filter((event) => event.type === 'task-started').map((event) => event.attempt)).toEqual(
      events.filter((event) => event.type === 'task-started').map(() => 1),
    );
    const workDirA = await realpath(a.workDir);
    for (const task of down?.lost ?? []) expect(cwds.get(tasks[task]!)?.at(-1)?.startsWith(`${workDirA}/`), tasks[task]).toBe(true);
    expect(events.filter((event) => event.type === 'task-finished' && event.outcome === 'completed').length).toBe(4);
  });
});
