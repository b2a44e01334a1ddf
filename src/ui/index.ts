// The terminal: the live view, its state apart from its drawing, and the words of events.
// What the rest of foreman uses from this folder; its other files are its own.

export { createLiveView } from './live-view.ts';
export { createPlainView, jsonView, type RunView } from './render.ts';
export { table } from './table.ts';
