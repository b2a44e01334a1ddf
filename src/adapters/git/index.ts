// Git: the long-lived batch runner, refs, commits and trees, the worktree pool, capture, integration and landing.
// What the rest of foreman uses from this folder; its other files are its own.

export { agentWorktree, describeAgentWorktreeProblem, type ParkedStart, removeAgentWorktree, startFromParked } from './agent-worktrees.ts';
export { type Capture, captureCommit, captureWork } from './capture.ts';
export { writeWorkerExcludes } from './excludes.ts';
export { includedFiles } from './included.ts';
export { integrate, type Integration, integrationFailure, type IntegrationFailure, Integrator, parkedTrailers, parkedWork } from './integrate.ts';
export { land } from './land.ts';
export { completeLanding, landedBase, landingIntentPath, recordLandedBase } from './landing-files.ts';
export { clearLeftovers } from './leftovers.ts';
export { withCheckout } from './one-use-checkout.ts';
export { parkedChange, workDiff } from './parked-change.ts';
export { diskUsage, poolDir, removePlanWorktrees, worktreesRoot } from './pool-slots.ts';
export { describeProvisionFailure, type ProvisionFailure, symlinkDirectoriesOf, WORKTREE_INCLUDE } from './provisioning.ts';
export {
  asideRef,
  awaitingRef,
  commitOf,
  countCommits,
  deletePlanRefs,
  deleteRef,
  dropParked,
  foremanRefs,
  headBranchRef,
  integrationRef,
  isAncestor,
  missingAt,
  moveRef,
  parkedPrefix,
  parkedTasks,
  type ParkKind,
  readRef,
  regularFilesIn,
  resolveCommit,
  startIntegrationRef,
  topLevel,
} from './refs.ts';
export { Git, type RepositoryOperation } from './repository.ts';
export { endGitSessions, GIT_TIME_LIMIT_ENV, gitProcessCount, runGit } from './runner.ts';
export { heldBy, setAsideInWorktree } from './set-aside.ts';
export { uncommittedChangesNotice } from './uncommitted.ts';
export { openPool, WorktreePool } from './worktree-pool.ts';
