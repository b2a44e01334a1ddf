// The dependency graph as a Mermaid flowchart, tasks coloured by status.

import { type Plan, statusOf, type TaskStatus } from './plan.ts';

const STYLE: Record<TaskStatus, string> = {
  pending: 'fill:#eeeeee,stroke:#9e9e9e,color:#212121',
  in_progress: 'fill:#bbdefb,stroke:#1565c0,color:#0d47a1',
  completed: 'fill:#c8e6c9,stroke:#2e7d32,color:#1b5e20',
  failed: 'fill:#ffcdd2,stroke:#c62828,color:#b71c1c',
  blocked: 'fill:#ffe0b2,stroke:#ef6c00,color:#e65100',
  skipped: 'fill:#f5f5f5,stroke:#bdbdbd,color:#757575,stroke-dasharray: 4 3',
  awaiting_approval: 'fill:#fff9c4,stroke:#f9a825,color:#f57f17',
};

/** Mermaid labels: quotes and angle brackets become entity codes. */
export const mermaidText = (text: string): string =>
  text
    .replace(/"/g, '#quot;')
    .replace(/</g, '#lt;')
    .replace(/>/g, '#gt;')
    .replace(/[\r\n]+/g, ' ');

export function mermaidGraph(plan: Plan): string {
  const lines = ['flowchart TD'];
  for (const [i, t] of plan.tasks.entries()) lines.push(`  t${i}["${i}: ${mermaidText(t.subject)}"]`);
  plan.tasks.forEach((t, i) => {
    for (const d of t.blockedBy) lines.push(`  t${d} --> t${i}`);
  });
  const used = new Set(plan.tasks.map(statusOf));
  for (const [status, style] of Object.entries(STYLE)) {
    if (used.has(status as TaskStatus)) lines.push(`  classDef ${status} ${style}`);
  }
  for (const status of used) {
    const members = plan.tasks.flatMap((t, i) => (statusOf(t) === status ? [`t${i}`] : []));
    lines.push(`  class ${members.join(',')} ${status}`);
  }
  return lines.join('\n');
}
