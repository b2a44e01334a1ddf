// Where a run's events go: the run's journal (its adapter, run/adapters.ts), always, and one view
// on stdout — live on a terminal, plain timestamped lines otherwise, JSON lines with --json.

import { ownLayout } from '../adapters/index.ts';
import {
  countByStatus,
  formatCostExact,
  type Layout,
  type Plan,
  plural,
  type RunEvent,
  type RunEventBody,
  setAsideSummary,
  statusOf,
  UNKNOWN,
  type UsageFigure,
} from '../core/index.ts';
import { createLiveView, createPlainView, jsonView, type RunView } from '../ui/index.ts';
import type { EventJournal } from '../run/index.ts';
import type { Io } from './command.ts';

export interface Reporter {
  emit(event: RunEventBody): void;
  /** The journal only: for what was said on stdout already, before the run started. */
  record(event: RunEventBody): void;
  /** The closing summary (text modes only; --json has `run-finished`), with the way to go on (`next`, one step a line). */
  summary(plan: Plan, usage: UsageFigure, next: readonly string[]): void;
  close(): Promise<void>;
}

/**
 * The run's Summary, after its last line: the tasks by state (those not completed with their
 * reason), what attempts set aside (with the commands that read it back), the cost, and the way to
 * go on. Never cut: a pipe or a log keeps every line whole, and a terminal wraps them.
 */
export function summaryLines(plan: Plan, usage: UsageFigure, next: readonly string[], repo?: string): string[] {
  const by = (s: string) =>
    plan.tasks.flatMap((t, i) => (statusOf(t) === s ? [`    ${i}: ${t.subject}${t.result && s !== 'completed' ? ` — ${t.result.split('\n')[0]}` : ''}`] : []));
  const counts = countByStatus(plan);
  const lines = ['', `Summary: ${counts.completed}/${plan.tasks.length} completed`];
  for (const s of ['failed', 'blocked', 'skipped', 'awaiting_approval', 'pending'] as const) {
    if (counts[s] > 0) lines.push(`  ${s}: ${counts[s]}`, ...by(s));
  }
  const setAside = plan.tasks.flatMap((t, i) =>
    t.setAside === undefined ? [] : [`    ${i}: ${t.subject} (attempt ${t.setAside.attempt}) — ${setAsideSummary(t.setAside, repo)}`],
  );
  if (setAside.length > 0) lines.push(`  set aside: ${plural(setAside.length, 'task')}`, ...setAside);
  lines.push(
    usage === UNKNOWN
      ? '  cost: unknown (not measured)'
      : `  cost: ${formatCostExact(usage.costUsd)}; tokens: ${usage.inputTokens} in, ${usage.outputTokens} out, ${usage.cacheReadTokens} cache read`,
  );
  if (next.length > 0) lines.push('  to go on:', ...next.map((step) => `    ${step}`));
  return lines;
}

export function createReporter(options: { io: Io; json: boolean; runId: string; journal: EventJournal; plan?: Plan; layout?: Layout }): Reporter {
  const { journal } = options;
  // How its lines spell foreman's and git's commands: from where the person is.
  const layout = options.layout ?? ownLayout();
  const write = (text: string) => options.io.out(text.replace(/\n$/, ''));
  const live = !options.json && options.io.isTTY;
  const view: RunView = options.json
    ? jsonView({ write })
    : live
      ? createLiveView({
          write: (t) => process.stdout.write(t),
          columns: options.io.columns,
          color: !('NO_COLOR' in options.io.env) && options.io.env.TERM !== 'dumb',
          baseline: options.plan ? countByStatus(options.plan) : undefined,
          layout,
        })
      : createPlainView({ write, layout });
  const ticker = live ? setInterval(() => view.tick(), 250) : undefined;
  ticker?.unref();
  const onResize = () => (view as { setColumns?: (c: number) => void }).setColumns?.(process.stdout.columns ?? 80);
  if (live) process.stdout.on('resize', onResize);

  const stamped = (body: RunEventBody) => ({ ...body, runId: options.runId, at: new Date().toISOString() }) as RunEvent;
  return {
    emit(body) {
      const event = stamped(body);
      journal.append([event]);
      view.update(event);
    },
    record(body) {
      journal.append([stamped(body)]);
    },
    summary(plan, usage, next) {
      if (options.json) return;
      view.close();
      options.io.out(summaryLines(plan, usage, next, layout.repo).join('\n'));
    },
    async close() {
      if (ticker) clearInterval(ticker);
      if (live) process.stdout.off('resize', onResize);
      view.close();
      await journal.close();
    },
  };
}
