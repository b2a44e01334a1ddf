// The pid counter's arc: a scan for what a worker or command started reads only the pids handed
// out since it started. Pinned against a model of Linux's allocator (alloc_pid: the next free
// number after the last one handed out, up to pid_max, then again from 300; numbers in use are
// skipped, and a number stays in use while a process group or session still names it).

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allocatedSince, FIRST_PID_AFTER_WRAP, type PidCounter, readPidCounter, readPidMax } from '../src/adapters/processes/pid-counter.ts';

/** A pid namespace as alloc_pid sees it. */
class Allocator {
  /** Numbers in use by a live task. */
  readonly tasks = new Set<number>();
  /** Numbers in use with no task: a process group or session outlives its leader (at most two a task). */
  readonly held = new Set<number>();
  forks = 0;
  constructor(
    readonly pidMax: number,
    public lastPid: number,
  ) {}

  counter(): PidCounter {
    return { lastPid: this.lastPid, forks: this.forks, tasks: this.tasks.size };
  }

  private free = (pid: number) => !this.tasks.has(pid) && !this.held.has(pid);

  /** A new task's pid, or null when every number is in use. */
  fork(): number | null {
    const low = this.lastPid + 1 > FIRST_PID_AFTER_WRAP ? FIRST_PID_AFTER_WRAP : 1;
    for (let pid = this.lastPid + 1; pid < this.pidMax; pid++) if (this.free(pid)) return this.take(pid);
    for (let pid = low; pid <= this.lastPid; pid++) if (this.free(pid)) return this.take(pid);
    return null;
  }

  private take(pid: number): number {
    this.tasks.add(pid);
    this.lastPid = pid;
    this.forks++;
    return pid;
  }

  /** The `index`-th live task exits; its number stays in use when `keep` (its group or session lives on). */
  exit(index: number, keep: boolean): void {
    const pid = [...this.tasks][index % this.tasks.size];
    if (pid === undefined) return;
    this.tasks.delete(pid);
    if (keep) this.held.add(pid);
    // A group or session lives while a task is in it: at most two such numbers a live task.
    for (const number of this.held) if (this.held.size > 2 * this.tasks.size) this.held.delete(number);
  }

  /** The `index`-th held number is let go (its group's last member left). */
  release(index: number): void {
    const pid = [...this.held][index % this.held.size];
    if (pid !== undefined) this.held.delete(pid);
  }
}

/** Forks, exits and groups let go, in bursts: the counter skips the most when many numbers are in use. */
type Operation =
  | { kind: 'fork'; times: number }
  | { kind: 'exit'; index: number; times: number; keep: boolean }
  | { kind: 'release'; index: number; times: number };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('fork' as const), times: fc.integer({ min: 1, max: 60 }) }),
  fc.record({ kind: fc.constant('exit' as const), index: fc.nat(), times: fc.integer({ min: 1, max: 60 }), keep: fc.boolean() }),
  fc.record({ kind: fc.constant('release' as const), index: fc.nat(), times: fc.integer({ min: 1, max: 20 }) }),
);

function apply(allocator: Allocator, op: Operation, born: Set<number>): void {
  for (let time = 0; time < op.times; time++) {
    switch (op.kind) {
      case 'fork': {
        const pid = allocator.fork();
        if (pid !== null) born.add(pid);
        break;
      }
      case 'exit':
        allocator.exit(op.index + time, op.keep);
        break;
      case 'release':
        allocator.release(op.index + time);
        break;
    }
  }
}

describe('the pid counter', () => {
  it('every pid handed out after a counter lies on its arc to the counter now, or the arc is not given', () => {
    const given = { straight: 0, wrapped: 0 };
    fc.assert(
      fc.property(
        fc.integer({ min: FIRST_PID_AFTER_WRAP + 20, max: FIRST_PID_AFTER_WRAP + 150 }),
        fc.nat(),
        fc.array(operation, { maxLength: 20 }),
        fc.array(operation, { maxLength: 30 }),
        (pidMax, start, before, after) => {
          // Half the runs start just below pid_max, so that the counter wraps while the scan's arc is open.
          const cycle = pidMax - FIRST_PID_AFTER_WRAP;
          const first = start % 2 === 0 ? pidMax - 1 - (start % 30) : FIRST_PID_AFTER_WRAP + (start % cycle);
          const allocator = new Allocator(pidMax, first);
          for (const op of before) apply(allocator, op, new Set());
          const since = allocator.counter();
          const born = new Set<number>();
          for (const op of after) apply(allocator, op, born);
          const isNew = allocatedSince(since, allocator.counter(), pidMax);
          if (isNew === null) return;
          given[allocator.lastPid >= since.lastPid ? 'straight' : 'wrapped']++;
          // What is alive now and got its pid after the counter was read: each one on the arc.
          for (const pid of allocator.tasks) if (born.has(pid)) expect(isNew(pid), `pid ${pid} from ${since.lastPid} to ${allocator.lastPid}`).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
    // The arc was given, across pid_max as well, often enough for the property to say something.
    expect(given.straight).toBeGreaterThan(40);
    expect(given.wrapped).toBeGreaterThan(40);
  });

  it('gives the arc while few forks happened, and gives it up once the counter may have come round', () => {
    const since = { lastPid: 1000, forks: 50, tasks: 100 };
    const within = allocatedSince(since, { lastPid: 1010, forks: 60, tasks: 100 }, 32768)!;
    expect([1000, 1001, 1010, 1011, 999].map(within)).toEqual([false, true, true, false, false]);
    // Wrapped: from 32700 up to pid_max, then from 300 to 310.
    const wrapped = allocatedSince({ ...since, lastPid: 32700 }, { lastPid: 310, forks: 200, tasks: 100 }, 32768)!;
    expect([32700, 32701, 32767, 300, 310, 311, 1000].map(wrapped)).toEqual([false, true, true, true, true, false, false]);
    // 2 × forks + 3 × tasks reaches the cycle's length: the counter may have passed every number.
    expect(allocatedSince(since, { lastPid: 1010, forks: 50 + 16_100, tasks: 100 }, 32768)).toBeNull();
    expect(allocatedSince(since, null, 32768)).toBeNull();
    expect(allocatedSince(since, { lastPid: 1010, forks: 60, tasks: 100 }, null)).toBeNull();
  });

  it.runIf(process.platform === 'linux')('reads the counter from /proc, and a child started after it gets a pid on the arc', async () => {
    const since = readPidCounter();
    expect(since).not.toBeNull();
    const { execa } = await import('execa');
    const child = await execa('sh', ['-c', 'echo $$']);
    const isNew = allocatedSince(since!, readPidCounter(), readPidMax());
    expect(isNew).not.toBeNull();
    expect(isNew!(Number(child.stdout))).toBe(true);
    expect(isNew!(process.pid)).toBe(false);
  });
});
