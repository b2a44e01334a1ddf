// A finished task whose files are not committed yet takes no worker slot, but still keeps the
// tasks that overlap it from starting: their edits would mix into its commit.

import { describe, expect, it } from 'vitest';
import { type Attempt, claimingFiles } from '../../src/core/engine-step.ts';
import type { Plan, Task } from '../../src/core/plan.ts';
import { pickStarts } from '../../src/core/schedule.ts';

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
  it('are verified attempts waiting to be recorded or being recorded, and gated work; not running ones', () => {
    const tasks = [task('in_progress'), task('in_progress'), task('awaiting_approval'), task('pending'), task('completed'), task('in_progress')];
    const plan: Plan = { schemaVersion: 3, goal: 'g', tasks };
    const attempt = (index: number, stage: Attempt['stage']): [number, Attempt] => [index, { task: index, number: 1, stage }];
    expect([...claimingFiles({ plan, attempts: new Map([attempt(0, 'running'), attempt(1, 'verified'), attempt(5, 'recording')]) })].sort()).toEqual([1, 2, 5]);
    expect([...claimingFiles({ plan, attempts: new Map([attempt(0, 'running'), attempt(1, 'verifying'), attempt(5, 'running')]) })]).toEqual([2]);
  });
});
