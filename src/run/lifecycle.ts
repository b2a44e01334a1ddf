// What both paths do around the step function to the world, once: landing the integration tip on
// the person's branch, and finishing a plan whose work has all landed (what is said of each:
// core/engine/run-lifecycle.ts). The headless run (run/headless/headless.ts) and the in-session steps
// (run/session/session.ts) call these.

import {
  commandHint,
  describeGitFailure,
  describeLandingProblem,
  type GitFailure,
  landingNotice,
  landingProblemSentence,
  type LandingState,
  type Layout,
  type Plan,
  type RunNotice,
  shellWord,
  type StopReason,
} from '../core/index.ts';
import { ownLayout } from '../adapters/index.ts';
import { archivePlan } from './archive.ts';
import type { Integration } from './integration.ts';
import type { Workspaces } from './workspace/index.ts';

/**
 * Landing the integration tip, as a run does it: on the branch the run started on, as commits (or,
 * with `commit: false`, as uncommitted changes, from what an earlier landing left). Each call says
 * what happened (`landingNotice`); `state` is what the last call found.
 */
export function lander(integration: Integration, options: { branch: string | null; commit: boolean; planPath: string; layout: Layout }) {
  let state: LandingState = { landed: true, problem: [], files: 0, commit: null };
  const where = options.commit ? (options.branch === null ? 'the detached HEAD' : options.branch.replace(/^refs\/heads\//, '')) : 'your files, uncommitted';
  return {
    get state(): LandingState {
      return state;
    },
    get landed(): boolean {
      return state.landed;
    },
    advice: () => landingProblemSentence(state.problem),
    async land(): Promise<RunNotice | null> {
      const landed = await integration.land({ branch: options.branch, mode: options.commit ? 'commit' : 'worktree' });
      if (!landed.ok) {
        state = { landed: false, problem: describeLandingProblem(landed.error, integration.ref, options.layout), files: 0, commit: null };
      } else {
        state = { landed: true, problem: [], files: landed.value.upToDate ? 0 : landed.value.paths.length, commit: landed.value.to };
      }
      return landingNotice(landed, { ref: integration.ref, layout: options.layout, where });
    },
  };
}

/**
 * What finishing the plan did: where the plan went (null: not finished), and what to say of a
 * person's edit kept aside, or of refs git could not remove (`refsKept`: then the plan stays).
 */
export interface FinishedPlan {
  archived: string | null;
  notice: RunNotice | null;
  refsKept?: GitFailure;
}

/**
 * A run that ended with every task completed (`all-done`, as the step function said) finishes its
 * plan once the work has all landed: its worktrees and refs go (the gate process too, `endGate`)
 * and the plan moves to `history/`. The run's plan is written last through `save` (a PlanKeeper's):
 * an edit a person made since the run's last write is kept aside, byte for byte, and said, never
 * archived unseen. Not finished: nothing moves (its worktrees go once every task is completed).
 */
export async function finishPlan(
  end: { reason: StopReason } | null,
  plan: Plan,
  places: { integration: Pick<Integration, 'removeRefs'>; workspaces: Pick<Workspaces, 'remove'> },
  options: { planPath: string; landed: boolean; save: (plan: Plan) => Promise<string | null>; endGate?: () => Promise<unknown> },
): Promise<FinishedPlan> {
  if (end?.reason !== 'all-done') return { archived: null, notice: null };
  await places.workspaces.remove();
  if (!options.landed) return { archived: null, notice: null };
  return retirePlan(plan, places.integration, options);
}

/**
 * A plan whose every task is completed and landed, its worktrees gone, by a run's end or by `plan
 * land`: its gate process (`endGate`) and its refs go, and the plan moves to `history/` (unless it
 * is there already: `archived`), written last through `save`, which keeps a person's later edit aside.
 */
export async function retirePlan(
  plan: Plan,
  integration: Pick<Integration, 'removeRefs'>,
  options: { planPath: string; save: (plan: Plan) => Promise<string | null>; endGate?: () => Promise<unknown>; archived?: boolean },
): Promise<FinishedPlan> {
  await options.endGate?.();
  const removed = await integration.removeRefs();
  if (!removed.ok) {
    // Every task landed: the plan stays, with the ref that finds it, for `plan land` to finish once git works.
    const land = commandHint('plan', `land --plan ${shellWord(options.planPath)}`, ownLayout());
    return {
      archived: null,
      notice: {
        type: 'notice',
        level: 'warning',
        message: `every task is completed and landed, but git could not remove the plan's refs (${describeGitFailure(removed.error)}), so the plan was not ${options.archived === true ? 'finished' : 'archived'}: once git works, \`${land}\` finishes it`,
      },
      refsKept: removed.error,
    };
  }
  if (options.archived === true) return { archived: null, notice: null };
  const kept = await options.save(plan);
  const archived = await archivePlan(options.planPath);
  if (kept === null) return { archived, notice: null };
  return {
    archived,
    notice: {
      type: 'notice',
      level: 'warning',
      message: `${options.planPath} was changed after the run last wrote it: the finished plan moved to ${archived} as the run left it, and the change was kept, byte for byte, in ${kept}`,
    },
  };
}
