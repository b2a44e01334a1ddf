// The headless run: the engine that carries out the step function's effects, and `execute`'s whole run.
// What the rest of foreman uses from this folder; its other files are its own.

export { type HeadlessRefusal, runHeadless, runLayout } from './headless.ts';
