// `plan next`: hand out what may start now, with each worker's prompt file.

import { countByStatus } from '../../../core/index.ts';
import { type NextOutput, sessionNext } from '../../../run/index.ts';
import { RANGES } from '../../numeric-flags.ts';
import { nothingToPrepare, stepCommand } from './step-command.ts';

export const next = stepCommand({
  name: 'next',
  summary:
    'For /execute: mark the tasks to start now in progress and write their worker prompts to .design/prompts/task-<i>.md; dispatch each with isolation "worktree". JSON out.',
  usage: '[--repo DIR] [--plan FILE] [--concurrency N]',
  options: {
    concurrency: { type: 'string', valueName: 'N', description: "workers at once (default: the session's, from setup)", range: RANGES.workers },
  },
  prepare: nothingToPrepare,
  step: ({ numbers, plan, ctx }) => sessionNext(plan, ctx, { concurrency: numbers.concurrency }),
  // The last `commit` archived the finished plan: the lead asking again is told it is done.
  afterArchive: ({ path, plan }): NextOutput => ({
    round: 0,
    tasks: [],
    waiting: [],
    queued: 0,
    inProgress: [],
    stall: 'done',
    stuck: [],
    counts: countByStatus(plan),
    complete: true,
    archived: path,
  }),
});
