// Run reports, pure. Projections of the journal (runs, attempts, gate runs, archives and history)
// and renderers over them (the Markdown report and its JSON form, the Mermaid Gantt chart), one
// file per concern under core/report/; this module is their single entry point.

export * from './report/journal.ts';
export * from './report/runs.ts';
export * from './report/attempts.ts';
export * from './report/gate-runs.ts';
export * from './report/history.ts';
export * from './report/gantt.ts';
export * from './report/markdown.ts';
