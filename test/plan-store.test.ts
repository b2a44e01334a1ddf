import { spawn } from 'node:child_process';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Plan } from '../src/core/plan/plan.ts';
import { acquireLock, currentLockInfo, isLocked, type Lock, type LockInfo, lockPathFor, readLock } from '../src/adapters/store/run-lock.ts';
import { askDrain } from '../src/adapters/store/drain-note.ts';
import { PlanKeeper, readPlanFile, serializePlan, writePlanAtomic } from '../src/adapters/store/plan-file.ts';
import { createExclusive, writeFileAtomic } from '../src/adapters/store/atomic-file.ts';
import { processStartTime } from '../src/adapters/processes/processes.ts';
import { makeZombie } from './support/zombies.ts';

// Lets a test make the next file handle's writeFile write part of its data and then fail, and
// see which files were created (opened with `wx`).
const fault = vi.hoisted(() => ({ partialWriteBytes: -1, created: [] as string[] }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const orig = await importOriginal<typeof import('node:fs/promises')>();
  const open = async (...args: Parameters<typeof orig.open>) => {
    if (args[1] === 'wx') fault.created.push(String(args[0]));
    const fh = await orig.open(...args);
    if (fault.partialWriteBytes < 0) return fh;
    const n = fault.partialWriteBytes;
    return new Proxy(fh, {
      get(target, prop) {
        if (prop === 'writeFile') {
          return async (data: string | Uint8Array) => {
            await target.write(Buffer.from(data).subarray(0, n));
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          };
        }
        const v: unknown = Reflect.get(target, prop, target);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  };
  return { ...orig, open, default: { ...orig, open } };
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'foreman-store-'));
  fault.partialWriteBytes = -1;
  fault.created = [];
});
afterEach(async () => {
  fault.partialWriteBytes = -1;
  await rm(dir, { recursive: true, force: true });
});

const plan = (goal: string, n = 2): Plan => ({
  schemaVersion: 3,
  goal,
  tasks: Array.from({ length: n }, (_, i) => ({
    subject: `${goal} task ${i}`,
    blockedBy: [],
    metadata: { files: { create: [`src/f${i}.ts`], modify: [] } },
    note: 'unknown fields survive',
  })),
});

const otherFiles = async (keep: string[]) => (await readdir(dir)).filter((f) => !keep.includes(f));

describe('readPlanFile', () => {
  it('reads text, and tells a missing file from an unreadable one', async () => {
    const file = path.join(dir, 'plan.json');
    await writeFile(file, '{"goal":"ünïcode"}\n');
    expect(await readPlanFile(file)).toEqual({ ok: true, value: { text: '{"goal":"ünïcode"}\n' } });

    const missing = await readPlanFile(path.join(dir, 'nope.json'));
    expect(missing.ok).toBe(false);
    if (!missing.ok) expect(missing.error.kind).toBe('missing');
    const missingDir = await readPlanFile(path.join(dir, 'plan.json', 'x'));
    if (!missingDir.ok) expect(missingDir.error.kind).toBe('missing');

    const isDir = await readPlanFile(dir);
    expect(isDir.ok).toBe(false);
    if (!isDir.ok) expect(isDir.error).toMatchObject({ kind: 'unreadable', message: expect.stringContaining('EISDIR') });

    await writeFile(file, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    const binary = await readPlanFile(file);
    if (!binary.ok) expect(binary.error).toMatchObject({ kind: 'unreadable', message: expect.stringContaining('UTF-8') });
    expect(binary.ok).toBe(false);
  });
});

describe('writePlanAtomic / writeFileAtomic', () => {
  it('writes 2-space JSON with a trailing newline and leaves no temp file', async () => {
    const file = path.join(dir, 'plan.json');
    const p = plan('one');
    await writePlanAtomic(file, p);
    const text = await readFile(file, 'utf8');
    expect(text).toBe(`${JSON.stringify(p, null, 2)}\n`);
    expect(text).toBe(serializePlan(p));
    expect(JSON.parse(text)).toEqual(p);
    expect(await otherFiles(['plan.json'])).toEqual([]);
  });

  it('keeps the mode of the file it replaces', async () => {
    const file = path.join(dir, 'plan.json');
    await writeFile(file, '{}');
    await chmod(file, 0o600);
    await writePlanAtomic(file, plan('x'));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await chmod(file, 0o664);
    await writeFileAtomic(file, 'again');
    expect((await stat(file)).mode & 0o777).toBe(0o664);
    await writeFileAtomic(file, 'explicit', { mode: 0o640 });
    expect((await stat(file)).mode & 0o777).toBe(0o640);
  });

  it('replaces the target of a symlink, keeping the link', async () => {
    await mkdir(path.join(dir, 'real'));
    const real = path.join(dir, 'real', 'plan.json');
    await writeFile(real, 'old');
    const link = path.join(dir, 'plan.json');
    await symlink(real, link);
    await writeFileAtomic(link, 'new');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readlink(link)).toBe(real);
    expect(await readFile(real, 'utf8')).toBe('new');
  });

  it('leaves the old file intact and no temp file when the write fails midway', async () => {
    const file = path.join(dir, 'plan.json');
    await writePlanAtomic(file, plan('old'));
    const before = await readFile(file, 'utf8');

    fault.partialWriteBytes = 10;
    await expect(writePlanAtomic(file, plan('new', 50))).rejects.toThrow(/ENOSPC/);
    fault.partialWriteBytes = -1;

    expect(await readFile(file, 'utf8')).toBe(before);
    expect(await otherFiles(['plan.json'])).toEqual([]);
  });

  it('fails cleanly when the directory is missing', async () => {
    await expect(writeFileAtomic(path.join(dir, 'no', 'plan.json'), 'x')).rejects.toThrow(/ENOENT/);
  });

  it('leaves the old or the new complete file when the writer is SIGKILLed at any moment', async () => {
    const file = path.join(dir, 'plan.json');
    const moduleUrl = new URL('../src/adapters/store/plan-file.ts', import.meta.url).href;
    const script = path.join(dir, 'writer.mjs');
    await writeFile(
      script,
      `import { writePlanAtomic } from ${JSON.stringify(moduleUrl)};
const mk = (goal) => ({ schemaVersion: 3, goal, tasks: Array.from({ length: 4000 }, (_, i) => ({ subject: goal + ' task ' + i, blockedBy: [], metadata: { files: { create: [], modify: [] } } })) });
const plans = [mk('A'), mk('B')];
await writePlanAtomic(process.argv[2], plans[0]);
process.stdout.write('ready\\n');
for (let i = 1; ; i++) await writePlanAtomic(process.argv[2], plans[i % 2]);
`,
    );
    const projectRoot = fileURLToPath(new URL('..', import.meta.url));
    const seen = new Set<string>();
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, ['--import', 'tsx', script, file], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`writer exited early (${code})`)));
      });
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 150));
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      const parsed = JSON.parse(await readFile(file, 'utf8')) as Plan;
      expect(['A', 'B']).toContain(parsed.goal);
      expect(parsed.tasks).toHaveLength(4000);
      expect(parsed.tasks[3999]?.subject).toBe(`${parsed.goal} task 3999`);
      seen.add(parsed.goal);
    }
    // A SIGKILL cannot clean up: at most one temp file per killed writer may remain.
    expect((await otherFiles(['plan.json', 'writer.mjs'])).every((f) => /^\.plan\.json\.\d+\.[0-9a-f]+\.tmp$/.test(f))).toBe(true);
  }, 60_000);
});

describe('PlanKeeper: the plan file as a run keeps it', () => {
  it('writes over its own writes; keeps an edit made since, byte for byte, beside the plan, and says where', async () => {
    const file = path.join(dir, 'plan.json');
    const first = serializePlan(plan('mine'));
    await writeFile(file, first);
    const keeper = new PlanKeeper(file, first);
    const at = new Date('2026-11-24T15:00:00Z');
    expect(await keeper.save(plan('run 1'), at)).toBeNull();
    expect(await keeper.save(plan('run 2'), at)).toBeNull();
    expect(await otherFiles(['plan.json'])).toEqual([]);

    const edit = '{ "schemaVersion": 3, "goal": "edited by hand", "tasks": [] }\n';
    await writeFile(file, edit);
    const kept = await keeper.save(plan('run 3'), at);
    expect(kept).toBe(path.join(dir, 'plan.edited-20261124T150000Z.json'));
    expect(await readFile(kept!, 'utf8')).toBe(edit);
    expect(JSON.parse(await readFile(file, 'utf8')).goal).toBe('run 3');

    // A second edit in the same second gets a name of its own; the first stays as it was.
    await writeFile(file, edit.replace('edited', 'edited again'));
    expect(await keeper.save(plan('run 4'), at)).toBe(path.join(dir, 'plan.edited-20261124T150000Z-2.json'));
    expect(await readFile(kept!, 'utf8')).toBe(edit);
    // An edit that restores exactly what the run last wrote is no edit.
    await writeFile(file, serializePlan(plan('run 4')));
    expect(await keeper.save(plan('run 5'), at)).toBeNull();
  });

  it("makes the kept edit in place, as a new file of the person's (the mode any new file of theirs gets), and never over another", async () => {
    const file = path.join(dir, 'plan.json');
    await writeFile(file, serializePlan(plan('mine')));
    const keeper = new PlanKeeper(file, serializePlan(plan('mine')));
    const at = new Date('2026-11-24T15:00:00Z');
    const taken = path.join(dir, 'plan.edited-20261124T150000Z.json');
    await writeFile(taken, 'not the plan\n');
    await writeFile(file, 'edited by hand\n');
    fault.created = [];
    const kept = await keeper.save(plan('run'), at);
    expect(kept).toBe(path.join(dir, 'plan.edited-20261124T150000Z-2.json'));
    expect(await readFile(taken, 'utf8')).toBe('not the plan\n');
    expect(await readFile(kept!, 'utf8')).toBe('edited by hand\n');
    // Tried where it would go, then the next name; no temp file beside the plan but the plan's own write's.
    expect(fault.created.filter((f) => !path.basename(f).startsWith('.plan.json.'))).toEqual([taken, kept]);
    const probe = path.join(dir, 'probe');
    await writeFile(probe, '');
    expect((await stat(kept!)).mode & 0o777).toBe((await stat(probe)).mode & 0o777);
  });

  it('a plan file someone removed is written again, with nothing to keep', async () => {
    const file = path.join(dir, 'plan.json');
    await writeFile(file, serializePlan(plan('mine')));
    const keeper = new PlanKeeper(file, serializePlan(plan('mine')));
    await rm(file);
    expect(await keeper.save(plan('run'))).toBeNull();
    expect(JSON.parse(await readFile(file, 'utf8')).goal).toBe('run');
  });
});

describe('createExclusive', () => {
  it('creates a file only where none is, whole or in place, with the mode asked for', async () => {
    for (const whole of [true, false]) {
      const file = path.join(dir, `made-${whole}`);
      fault.created = [];
      expect(await createExclusive(file, 'first\n', { mode: 0o600, whole })).toBe(true);
      expect(await createExclusive(file, Buffer.from('second\n'), { whole })).toBe(false);
      expect(await readFile(file, 'utf8')).toBe('first\n');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      // Whole: written aside, then linked into place; in place: the file itself is created.
      expect(fault.created.map((f) => path.basename(f).startsWith(`.made-${whole}.`))).toEqual(whole ? [true, true] : [false, false]);
      expect(await otherFiles(['made-true', 'made-false'])).toEqual([]);
    }
  });

  it('leaves no file at all when a whole write fails midway', async () => {
    const file = path.join(dir, 'lock');
    fault.partialWriteBytes = 3;
    await expect(createExclusive(file, 'all of it\n')).rejects.toThrow('ENOSPC');
    fault.partialWriteBytes = -1;
    expect(await readdir(dir)).toEqual([]);
  });

  it("makes a run's lock whole, with the mode 0644 before the umask, as before", async () => {
    const probe = path.join(dir, 'probe');
    await writeFile(probe, '', { mode: 0o644 });
    const lockPath = lockPathFor(path.join(dir, 'plan.json'));
    fault.created = [];
    const r = await acquireLock(path.join(dir, 'plan.json'), currentLockInfo('foreman run'));
    expect(r.ok).toBe(true);
    expect(fault.created.length).toBeGreaterThan(0);
    expect(fault.created).not.toContain(lockPath);
    expect((await stat(lockPath)).mode & 0o777).toBe((await stat(probe)).mode & 0o777);
    if (r.ok) await r.value.release();
  });
});

describe('run lock', () => {
  const planPath = () => path.join(dir, 'plan.json');
  const info = (over: Partial<LockInfo> = {}): LockInfo => ({ ...currentLockInfo('foreman run'), ...over });

  /** The pid of a process that has exited. */
  async function deadPid(): Promise<number> {
    const child = spawn(process.execPath, ['-e', '']);
    const pid = child.pid!;
    await new Promise((r) => child.once('exit', r));
    return pid;
  }

  it('acquires, refuses a second holder, and releases', async () => {
    const r = await acquireLock(planPath(), info());
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const lock = r.value;
    expect(lock.path).toBe(path.join(dir, 'plan.lock'));
    expect(lock.takenOver).toBeUndefined();
    const onDisk = JSON.parse(await readFile(lockPathFor(planPath()), 'utf8')) as Record<string, unknown>;
    expect(onDisk).toMatchObject({ pid: process.pid, host: os.hostname(), command: 'foreman run' });

    const second = await acquireLock(planPath(), info({ command: 'foreman run again' }));
    expect(second).toEqual({ ok: false, error: { kind: 'held', holder: lock.info } });
    expect(await isLocked(planPath())).toBe(true);
    expect(await readLock(planPath())).toEqual({ state: 'live', holder: lock.info });

    expect(await lock.release()).toBe(true);
    expect(await lock.release()).toBe(false);
    expect(await readLock(planPath())).toEqual({ state: 'free' });
    expect(await isLocked(planPath())).toBe(false);
    expect(await otherFiles(['plan.json'])).toEqual([]);
  });

  it('takes over a lock whose process died', async () => {
    const pid = await deadPid();
    const stale: LockInfo = { pid, host: os.hostname(), startedAt: '2024-01-01T00:00:00.000Z', command: 'foreman run' };
    await writeFile(lockPathFor(planPath()), JSON.stringify(stale));
    expect(await readLock(planPath())).toEqual({ state: 'stale', holder: stale, why: 'dead-process' });
    expect(await isLocked(planPath())).toBe(false);

    const r = await acquireLock(planPath(), info());
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.takenOver).toEqual({ previous: stale, reason: 'dead-process' });
    expect(await readLock(planPath())).toEqual({ state: 'live', holder: r.value.info });
    expect(await r.value.release()).toBe(true);
  });

  it('waits out a takeover guard left by a process killed inside it, rather than calling the lock contended', async () => {
    // A run killed between entering the guard and leaving it: its lock is stale and its guard stays.
    const stale: LockInfo = { pid: await deadPid(), host: os.hostname(), startedAt: '2024-01-01T00:00:00.000Z', command: 'execute' };
    await writeFile(lockPathFor(planPath()), JSON.stringify(stale));
    const guard = `${lockPathFor(planPath())}.takeover`;
    await mkdir(guard);
    // 7.5 s old: it turns stale (10 s) after 2.5 s, longer than the old fifty tries lasted.
    const then = new Date(Date.now() - 7_500);
    await utimes(guard, then, then);
    const r = await acquireLock(planPath(), info());
    if (!r.ok) throw new Error(`expected a takeover, got ${JSON.stringify(r.error)}`);
    expect(r.value.takenOver).toEqual({ previous: stale, reason: 'dead-process' });
    expect(await r.value.release()).toBe(true);
    expect(await otherFiles(['plan.json'])).toEqual([]);
  });

  it("records the holder's process start time in the lock", async () => {
    const r = await acquireLock(planPath(), info());
    if (!r.ok) throw new Error('expected the lock');
    const onDisk = JSON.parse(await readFile(lockPathFor(planPath()), 'utf8')) as Record<string, unknown>;
    expect(onDisk.processStart).toBe(processStartTime(process.pid));
    expect(onDisk.processStart).toMatch(/\S/);
    await r.value.release();
  });

  it('takes over at once a lock whose holder is a zombie (killed, never reaped)', async () => {
    const zombie = await makeZombie();
    try {
      process.kill(zombie.pid, 0); // kill(0) alone would call it alive
      const held: LockInfo = {
        pid: zombie.pid,
        host: os.hostname(),
        startedAt: '2024-01-01T00:00:00.000Z',
        command: 'execute',
        processStart: processStartTime(zombie.pid)!,
      };
      await writeFile(lockPathFor(planPath()), JSON.stringify(held));
      expect(await readLock(planPath())).toEqual({ state: 'stale', holder: held, why: 'dead-process' });
      const r = await acquireLock(planPath(), info());
      if (!r.ok) throw new Error(`expected a takeover, got ${JSON.stringify(r.error)}`);
      expect(r.value.takenOver).toEqual({ previous: held, reason: 'dead-process' });
      await r.value.release();

      // A lock of an older version (no start time) held by a zombie is taken over too.
      const { processStart: _, ...old } = held;
      await writeFile(lockPathFor(planPath()), JSON.stringify(old));
      const again = await acquireLock(planPath(), info());
      if (!again.ok) throw new Error('expected a takeover of the old-style lock');
      expect(again.value.takenOver).toEqual({ previous: old, reason: 'dead-process' });
      await again.value.release();
    } finally {
      zombie.parent.kill('SIGKILL');
    }
  });

  it('takes over at once a lock whose pid now belongs to another process', async () => {
    // A live pid (this process) with another start time: the holder died and its pid was reused.
    const mine = processStartTime(process.pid)!;
    const reused: LockInfo = { pid: process.pid, host: os.hostname(), startedAt: '2024-01-01T00:00:00.000Z', command: 'execute', processStart: `${mine}0` };
    await writeFile(lockPathFor(planPath()), JSON.stringify(reused));
    expect(await readLock(planPath())).toEqual({ state: 'stale', holder: reused, why: 'pid-reused' });
    expect(await isLocked(planPath())).toBe(false);
    const r = await acquireLock(planPath(), info());
    if (!r.ok) throw new Error(`expected a takeover, got ${JSON.stringify(r.error)}`);
    expect(r.value.takenOver).toEqual({ previous: reused, reason: 'pid-reused' });
    await r.value.release();
  });

  it('keeps a lock of an older version (no start time) held by a live process', async () => {
    const old: LockInfo = { pid: process.pid, host: os.hostname(), startedAt: '2024-01-01T00:00:00.000Z', command: 'execute' };
    await writeFile(lockPathFor(planPath()), JSON.stringify(old));
    expect(await readLock(planPath())).toEqual({ state: 'live', holder: old });
    expect(await acquireLock(planPath(), info())).toEqual({ ok: false, error: { kind: 'held', holder: old } });
    // The same holder with its real start time recorded is live too.
    const current: LockInfo = { ...old, processStart: processStartTime(process.pid)! };
    await writeFile(lockPathFor(planPath()), JSON.stringify(current));
    expect(await acquireLock(planPath(), info())).toEqual({ ok: false, error: { kind: 'held', holder: current } });
  });

  it('takes over an empty or garbage lock file (a crash mid-write)', async () => {
    for (const garbage of ['', '{"pid": 12', 'null', '{"pid": 0, "host": "x", "startedAt": "y"}']) {
      const file = lockPathFor(planPath());
      await writeFile(file, garbage);
      const old = new Date(Date.now() - 60_000);
      await utimes(file, old, old);
      expect(await readLock(planPath())).toEqual({ state: 'unparseable', text: garbage });
      const r = await acquireLock(planPath(), info());
      expect(r.ok, garbage).toBe(true);
      if (!r.ok) return;
      expect(r.value.takenOver).toEqual({ previous: null, reason: 'unparseable' });
      await r.value.release();
    }
  });

  it('waits briefly before taking over a garbage lock that was just written', async () => {
    await writeFile(lockPathFor(planPath()), '');
    const started = Date.now();
    const r = await acquireLock(planPath(), info());
    expect(r.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    if (r.ok) await r.value.release();
  });

  it('treats a holder on another host as held', async () => {
    const foreign: LockInfo = { pid: 1, host: `not-${os.hostname()}`, startedAt: '2024-01-01T00:00:00.000Z' };
    await writeFile(lockPathFor(planPath()), JSON.stringify(foreign));
    expect(await acquireLock(planPath(), info())).toEqual({ ok: false, error: { kind: 'held', holder: foreign } });
    expect(await readLock(planPath())).toEqual({ state: 'foreign', holder: foreign });
    expect(await isLocked(planPath())).toBe(true);
  });

  it('releases only a lock that is still ours', async () => {
    const r = await acquireLock(planPath(), info());
    if (!r.ok) throw new Error('expected the lock');
    const lock: Lock = r.value;
    const someoneElse = JSON.stringify({ pid: 1, host: os.hostname(), startedAt: 'later' });
    await writeFile(lockPathFor(planPath()), someoneElse);
    expect(await lock.release()).toBe(false);
    expect(lock.releaseSync()).toBe(false);
    expect(await readFile(lockPathFor(planPath()), 'utf8')).toBe(someoneElse);
  });

  it('releaseSync removes our lock', async () => {
    const r = await acquireLock(planPath(), info());
    if (!r.ok) throw new Error('expected the lock');
    expect(r.value.releaseSync()).toBe(true);
    expect(await readLock(planPath())).toEqual({ state: 'free' });
  });

  it('lets exactly one of many concurrent acquirers take over a stale lock', async () => {
    const stale: LockInfo = { pid: await deadPid(), host: os.hostname(), startedAt: 'then' };
    await writeFile(lockPathFor(planPath()), JSON.stringify(stale));
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => acquireLock(planPath(), info({ command: `run ${i}` }))));
    const winners = results.filter((r) => r.ok);
    expect(winners).toHaveLength(1);
    for (const r of results) if (!r.ok) expect(r.error.kind).toBe('held');
    expect(await otherFiles(['plan.json', 'plan.lock'])).toEqual([]);
  });

  it('lets exactly one of many concurrent acquirers create a fresh lock', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, () => acquireLock(planPath(), info())));
    expect(results.filter((r) => r.ok)).toHaveLength(1);
  });
});

describe("a drain asked of the lock's holder", () => {
  const planPath = () => path.join(dir, 'plan.json');
  const holder: LockInfo = { pid: 4242, host: os.hostname(), startedAt: '2024-05-01T10:00:00.000Z', command: 'execute' };
  const settled = <T>(r: { ok: true; value: T } | { ok: false; error: string }): T => {
    if (!r.ok) throw new Error(r.error);
    return r.value;
  };

  it('of drains asked at the same moment, exactly one asks (and signals); the others find it asked already', async () => {
    const asks = (await Promise.all(Array.from({ length: 4 }, () => askDrain(planPath(), holder)))).map(settled);
    expect(asks.filter((a) => a.kind === 'asked')).toHaveLength(1);
    const at = JSON.parse(await readFile(path.join(dir, 'plan.drain'), 'utf8')).at;
    expect(asks.filter((a) => a.kind === 'asked-already')).toEqual(Array.from({ length: 3 }, () => ({ kind: 'asked-already', at })));
    expect(await askDrain(planPath(), holder)).toEqual({ ok: true, value: { kind: 'asked-already', at } });
  });

  it('replaces a note another run left (another pid, or the same pid started at another time), once, however many drains find it', async () => {
    for (const other of [{ pid: 4243 }, { startedAt: '2024-04-30T09:00:00.000Z' }]) {
      await writeFile(path.join(dir, 'plan.drain'), `${JSON.stringify({ ...holder, ...other, at: '2024-04-30T09:00:01.000Z' })}\n`);
      const asks = (await Promise.all(Array.from({ length: 3 }, () => askDrain(planPath(), holder)))).map(settled);
      expect(
        asks.filter((a) => a.kind === 'asked'),
        JSON.stringify(other),
      ).toHaveLength(1);
      expect(JSON.parse(await readFile(path.join(dir, 'plan.drain'), 'utf8'))).toMatchObject({ pid: holder.pid, startedAt: holder.startedAt });
      expect(await otherFiles(['plan.drain'])).toEqual([]);
      await rm(path.join(dir, 'plan.drain'));
    }
  });
});
