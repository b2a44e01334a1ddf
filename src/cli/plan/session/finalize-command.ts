// `plan finalize`: judge and verify each subagent's report (read from a results file).

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { sessionFinalize, type WorkerResult } from '../../../run/index.ts';
import { RANGES } from '../../numeric-flags.ts';
import { EXIT, usageError } from '../../exit.ts';
import { assertNever, describeGitFailure, describeJsonError, isRecord } from '../../../core/index.ts';
import { refuseUnsandboxed, requireSandboxFlag, requireSandboxOption } from './sandbox-flags.ts';
import { millisecondsOf, stepCommand, StepError, str } from './step-command.ts';

/** The results file: `[{"task": N, "output": "…", "worktree": "<worktreePath>"}]` (`worktree` when the Task result named one). */
export function parseResults(text: string, file: string): WorkerResult[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new StepError(EXIT.invalid, 'bad-results', [`${file}: ${describeJsonError(text, e instanceof Error ? e : new Error(String(e)))}`]);
  }
  const list = Array.isArray(data) ? data : isRecord(data) ? data.results : undefined;
  if (!Array.isArray(list)) throw new StepError(EXIT.invalid, 'bad-results', [`${file}: expected a JSON array of {"task": N, "output": "…"}`]);
  // A round's results are never none: a lead that has none has lost its workers' replies (the tasks stay in progress).
  if (list.length === 0)
    throw new StepError(EXIT.invalid, 'bad-results', [
      `${file}: no results (an empty list), so nothing was finalized: give one {"task": N, "output": "…"} for each task \`plan next\` handed out`,
    ]);
  return list.map((r: unknown, k) => {
    const o = isRecord(r) ? r : {};
    const { task, output, worktree } = o;
    const worktreeOk = worktree === undefined || worktree === null || (typeof worktree === 'string' && worktree !== '');
    if (!isRecord(r) || typeof task !== 'number' || !Number.isInteger(task) || task < 0 || typeof output !== 'string' || !worktreeOk) {
      throw new StepError(EXIT.invalid, 'bad-results', [
        `${file}: entry ${k} must be {"task": <task index>, "output": "<the worker's final text>", "worktree": "<the worktreePath of its Task result, when there is one>"} (got ${JSON.stringify(r)?.slice(0, 200)})`,
      ]);
    }
    return { task, output, ...(typeof worktree === 'string' ? { worktree } : {}) };
  });
}

export const finalize = stepCommand({
  name: 'finalize',
  summary:
    "For /execute: judge the workers' final lines, verify each in its subagent's worktree (spot-check, undeclared changes, acceptance checks), retry, fail or block, cascade, breaker; remove the worktrees. JSON out.",
  usage: '--results FILE [--repo DIR] [--plan FILE] [--max-attempts N] [--check-timeout SECONDS] [--sandbox on]',
  options: {
    ...requireSandboxOption,
    results: {
      type: 'string',
      valueName: 'FILE',
      description: 'JSON array of {"task": N, "output": "<the worker\'s final text, or its last line>", "worktree": "<the worktreePath of its Task result>"}',
    },
    'max-attempts': { type: 'string', valueName: 'N', description: "attempts per task (default: the session's, from setup)", range: RANGES.attempts },
    'check-timeout': {
      type: 'string',
      valueName: 'SECONDS',
      description: "time limit of each acceptance command (default: the session's)",
      range: RANGES.timeoutSeconds,
    },
  },
  async prepare(values, cwd) {
    requireSandboxFlag(values);
    const file = str(values.results);
    if (file === undefined) throw usageError('--results FILE is required (a JSON array of {"task": N, "output": "…"})');
    const path = resolve(cwd, file);
    const text = await readFile(path, 'utf8').catch((e: Error) => {
      throw new StepError(EXIT.invalid, 'bad-results', [`cannot read ${path}: ${e.message}`]);
    });
    return parseResults(text, path);
  },
  async step({ values, numbers, plan, ctx }, results) {
    await refuseUnsandboxed('finalize', values, plan, ctx.planPath, () => 'the acceptance checks');
    const r = await sessionFinalize(plan, ctx, results, {
      maxAttempts: numbers['max-attempts'],
      checkTimeoutMs: millisecondsOf(numbers['check-timeout']),
    });
    if (r.ok) return r.value;
    switch (r.error.kind) {
      case 'bad-worktree':
        throw new StepError(EXIT.invalid, 'bad-worktree', [
          `task ${r.error.task}: ${r.error.message}; give the worktreePath its Task result named, or leave "worktree" out when it named none. Nothing was finalized.`,
        ]);
      case 'git-failed':
        throw new StepError(EXIT.gitFailed, 'git-failed', [
          `could not ${r.error.doing}: ${describeGitFailure(r.error.failure)}; nothing was finalized (every task stays in progress). Fix it and run finalize again with the same results.`,
        ]);
      default:
        return assertNever(r.error, 'finalize problem');
    }
  },
});
