// The plan as the recorded run (test/support/events.ts) leaves it.

import type { Plan } from '../../src/core/plan/plan.ts';
import { LONG_SUBJECT, usage } from './events.ts';

const files = (create: string[] = [], modify: string[] = []) => ({ files: { create, modify } });

export function planAfterRecordedRun(): Plan {
  return {
    schemaVersion: 3,
    goal: 'Build the parser',
    tasks: [
      {
        subject: 'Add parser',
        status: 'completed',
        attempts: 1,
        result: 'parser added',
        blockedBy: [],
        metadata: files(['src/parser.ts']),
        usage: usage(0.12),
        commit: 'abcdef1234567890abcdef1234567890abcdef12',
      },
      {
        subject: LONG_SUBJECT,
        status: 'failed',
        attempts: 2,
        result: 'the worker reported FAILED: cannot make the tests pass',
        blockedBy: [],
        metadata: files(['src/lexer.ts']),
        agent: { model: 'opus' },
        prompt: 'Write the lexer.',
        usage: usage(0.55),
      },
      {
        subject: 'Wire lexer into parser',
        status: 'skipped',
        skippedBy: 1,
        result: 'skipped: depends on task 1',
        blockedBy: [1],
        metadata: files([], ['src/parser.ts']),
        prompt: 'Wire it.',
      },
      {
        subject: 'Document the lexer',
        status: 'skipped',
        skippedBy: 1,
        result: 'skipped: depends on task 1',
        blockedBy: [2],
        metadata: files(['docs/lexer.md']),
        prompt: 'Document it.',
      },
    ],
  };
}
