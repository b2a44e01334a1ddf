// The adapters: each the one place that does its kind of I/O (git, processes, the sandbox, workers, the plan's files, hosts).
// What the rest of foreman uses from this folder; its other files are its own.

export * from './git/index.ts';
export * from './host/index.ts';
export { ownLauncherPath, ownLayout, ownPlanFormatPath, ownVersion, sandboxCliPath } from './layout.ts';
export * from './processes/index.ts';
export * from './sandbox/index.ts';
export * from './store/index.ts';
export * from './worker/index.ts';
