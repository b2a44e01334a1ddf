// `plan commit`: integrate the verified work, through the gate when there is one, and land it.

import { ownLayout } from '../../../adapters/index.ts';
import { assertNever, commandHint, describeGitFailure, landingProblemSentence } from '../../../core/index.ts';
import { sessionCommit } from '../../../run/index.ts';
import { EXIT } from '../../exit.ts';
import { refuseUnsandboxed, requireSandboxFlag, requireSandboxOption } from './sandbox-flags.ts';
import { noticeLines, refuseBaseline } from './setup-command.ts';
import { millisecondsOf, stepCommand, StepError, waitOption } from './step-command.ts';

export const commit = stepCommand({
  name: 'commit',
  summary:
    "For /execute: integrate the verified work (exactly the declared files, with trailers) onto the plan's ref and land it on your branch; archive the plan once every task is completed and landed. JSON out; exit 1 when the work could not land.",
  usage: '[--repo DIR] [--plan FILE] [--wait SECONDS] [--sandbox on]',
  options: {
    ...waitOption,
    ...requireSandboxOption,
  },
  prepare: async (values) => requireSandboxFlag(values),
  async step({ values, numbers, plan, ctx }) {
    await refuseUnsandboxed('commit', values, plan, ctx.planPath, (gated) => (gated ? "the gate (the plan's test command)" : null));
    const r = await sessionCommit(plan, ctx, { waitMs: millisecondsOf(numbers.wait) });
    if (r.ok) return r.value;
    switch (r.error.kind) {
      case 'baseline-failed':
        return refuseBaseline(ctx, r.error.command, r.error, r.error.output, r.error.notices);
      case 'git-failed':
        // As a headless run: the run stops, and the tasks run again (from a fresh setup) once git works.
        throw new StepError(EXIT.gitFailed, 'git-failed', [
          `could not integrate the verified work: ${describeGitFailure(r.error.failure)}; your branch and files were not touched. Fix it, then start again with \`${commandHint('plan', 'setup', ownLayout())}\`: those tasks run again.`,
          ...noticeLines(r.error.notices),
        ]);
      default:
        return assertNever(r.error, 'commit problem');
    }
  },
  attention({ landing }) {
    return landing.landed
      ? null
      : {
          code: EXIT.incomplete,
          line: `the integrated work could not land: ${landingProblemSentence(landing.problem)} Then run \`${commandHint('plan', 'commit', ownLayout())}\` again.`,
        };
  },
});
