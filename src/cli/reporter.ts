// Where a run's events go: the run's journal (its adapter, run/adapters.ts), always, and one view
// on stdout — live on a terminal, plain timestamped lines otherwise, JSON lines with --json.

import { ownLayout } from '../adapters/layout.ts';
import type { RunEvent, RunEventBody } from '../core/events.ts';
import { formatCostExact } from '../core/format.ts';
import { countByStatus } from '../core/graph.ts';
import { type Plan, UNKNOWN, type UsageFigure, statusOf } from '../core/plan.ts';
import { type RunView, createLiveView, createPlainView, jsonView } from '../ui/render.ts';
import type { EventJournal } from '../run/adapters.ts';
import type { Io } from './command.ts';

export interface Reporter {
  emit(event: RunEventBody): void;
  /** The journal only: for what was said on stdout already, before the run started. */
  record(event: RunEventBody): void;
  /** The closing summary (text modes only; --json has `run-finished`). */
  summary(plan: Plan, usage: UsageFigure): void;
  close(): Promise<void>;
}

export function createReporter(options: { io: Io; json: boolean; runId: string; journal: EventJournal; plan?: Plan }): Reporter {
  const { journal } = options;
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
          layout: ownLayout(),
        })
      : createPlainView({ write, layout: ownLayout() });
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
    summary(plan, usage) {
      if (options.json) return;
      view.close();
      const by = (s: string) =>
        plan.tasks.flatMap((t, i) =>
          statusOf(t) === s ? [`    ${i}: ${t.subject}${t.result && s !== 'completed' ? ` — ${t.result.split('\n')[0]}` : ''}`] : [],
        );
      const counts = countByStatus(plan);
      const lines = ['', `Summary: ${counts.completed}/${plan.tasks.length} completed`];
      for (const s of ['failed', 'blocked', 'skipped', 'awaiting_approval', 'pending'] as const) {
        if (counts[s] > 0) lines.push(`  ${s}: ${counts[s]}`, ...by(s));
      }
      lines.push(
        usage === UNKNOWN
          ? '  cost: unknown (not measured)'
          : `  cost: ${formatCostExact(usage.costUsd)}; tokens: ${usage.inputTokens} in, ${usage.outputTokens} out, ${usage.cacheReadTokens} cache read`,
      );
      options.io.out(lines.join('\n'));
    },
    async close() {
      if (ticker) clearInterval(ticker);
      if (live) process.stdout.off('resize', onResize);
      view.close();
      await journal.close();
    },
  };
}
