// A finished task whose files are not committed yet takes no worker slot, but still keeps the
// tasks that overlap it from starting: their edits would mix into its commit.

import { describe, expect, it } from 'vitest';
import type { Attempt } from '../../src/core/engine/attempt.ts';
import { claimingFiles } from '../../src/core/engine/queries.ts';
import type { Plan, Task } from '../../src/core/plan/plan.ts';
import { pickStarts } from '../../src/core/plan/schedule.ts';
import { reported } from '../support/engine-rig.ts';

const task = (status: Task['status']): Task => ({ subject: 's', prompt: 'p', status, blockedBy: [], metadata: { files: { create: [], modify: ['x'] } } });

describe('pickStarts with tasks claiming their files', () => {
  const tasks = [task('in_progress'), task('pending'), task('pending')];
  const overlaps = [new Set([1]), new Set([0]), new Set<number>()];
  const base = { tasks, running: new Set<number>(), overlaps, concurrency: 2, priority: [1, 1, 1] };

  it('does not start a task that overlaps one being committed', () => {
    expect(pickStarts({ ...base, claimingFiles: new Set([0]) })).toEqual([2]);
  });

  it('a task claiming its files takes no slot', () => {
    expect(pickStarts({ ...base, concurrency: 1, claimingFiles: new Set([0]) })).toEqual([2]);
  });

  it('starts it once the commit is recorded', () => {
    expect(pickStarts({ ...base, claimingFiles: new Set() })).toEqual([1, 2]);
  });
});

describe('claimingFiles', () => {
  it('are verified attempts waiting to be recorded or being recorded, and work awaiting approval; not running ones', () => {
    const tasks = [task('in_progress'), task('in_progress'), task('awaiting_approval'), task('pending'), task('completed'), task('in_progress')];
    const plan: Plan = { schemaVersion: 3, goal: 'g', tasks };
    // Each stage as the engine makes it: a finished worker's run from verifying on, the work verification captured from verified on.
    const run = reported('COMPLETED: done');
    const verified = {
      decision: { kind: 'completed' as const, result: 'done' },
      work: { base: 'b'.repeat(40), entries: [{ path: 'x', mode: '100644', object: 'a'.repeat(40) }] },
      verifiedBy: { kind: 'this-run' as const, run },
    };
    const attempt = (task: number, stage: 'running' | 'verifying' | 'verified' | 'recording'): [number, Attempt] => {
      switch (stage) {
        case 'running':
          return [task, { task, number: 1, stage }];
        case 'verifying':
          return [task, { task, number: 1, stage, run }];
        case 'verified':
          return [task, { task, number: 1, stage, ...verified }];
        case 'recording':
          return [task, { task, number: 1, stage, purpose: 'integrate', ...verified }];
      }
    };
    expect([...claimingFiles({ plan, attempts: new Map([attempt(0, 'running'), attempt(1, 'verified'), attempt(5, 'recording')]) })].sort()).toEqual([1, 2, 5]);
    expect([...claimingFiles({ plan, attempts: new Map([attempt(0, 'running'), attempt(1, 'verifying'), attempt(5, 'running')]) })]).toEqual([2]);
  });
});
