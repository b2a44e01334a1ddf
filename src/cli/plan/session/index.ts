// The in-session step commands (`plan setup | next | finalize | commit`, and the gate process they
// start), one file each over one frame (step-command.ts).

export { commit } from './commit-command.ts';
export { finalize, parseResults } from './finalize-command.ts';
export { gate } from './gate-command.ts';
export { next } from './next-command.ts';
export { setup } from './setup-command.ts';
