// Where an attempt works: the workspace interface and its implementations (a local pool slot, a session subagent's worktree, a host's slot).
// What the rest of foreman uses from this folder; its other files are its own.

export { objectFormatOf, repositoryId } from './host-scripts.ts';
export { LocalWorkspaces, openLocalWorkspaces, type WorkspaceUse, type WorktreeSetup } from './local.ts';
export { openPlacedWorkspaces } from './placed.ts';
export { subagentWorkspaces } from './subagent.ts';
export type { WorkerJob, Workers, Workspace, Workspaces } from './workspace.ts';
