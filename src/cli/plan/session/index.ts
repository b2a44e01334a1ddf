// The in-session step commands (plan setup, next, finalize, commit, gate).
// What the rest of foreman uses from this folder; its other files are its own.

export { commit } from './commit-command.ts';
export { finalize } from './finalize-command.ts';
export { gate } from './gate-command.ts';
export { next } from './next-command.ts';
export { setup } from './setup-command.ts';
