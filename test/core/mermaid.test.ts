import { describe, expect, it } from 'vitest';
import { mermaidGraph, mermaidText } from '../../src/core/plan/mermaid.ts';
import type { Plan, TaskStatus } from '../../src/core/plan/plan.ts';

const plan = (subjects: string[], statuses: (TaskStatus | undefined)[], blockedBy: number[][]): Plan => ({
  schemaVersion: 3,
  goal: 'g',
  tasks: subjects.map((subject, i) => ({
    subject,
    prompt: 'p',
    blockedBy: blockedBy[i] ?? [],
    metadata: { files: { create: [], modify: [] } },
    ...(statuses[i] ? { status: statuses[i] } : {}),
  })),
});

describe('mermaidGraph', () => {
  it('draws every task, an edge from each blocker to its dependant, and a class per used status', () => {
    const g = mermaidGraph(plan(['A', 'B', 'C', 'D'], ['completed', undefined, 'failed', 'skipped'], [[], [0], [0], [1, 2]])).split('\n');
    expect(g).toEqual([
      'flowchart TD',
      '  t0["0: A"]',
      '  t1["1: B"]',
      '  t2["2: C"]',
      '  t3["3: D"]',
      '  t0 --> t1',
      '  t0 --> t2',
      '  t1 --> t3',
      '  t2 --> t3',
      expect.stringMatching(/^ {2}classDef pending fill:/),
      expect.stringMatching(/^ {2}classDef completed fill:/),
      expect.stringMatching(/^ {2}classDef failed fill:/),
      expect.stringMatching(/^ {2}classDef skipped fill:.*stroke-dasharray/),
      '  class t0 completed',
      '  class t1 pending',
      '  class t2 failed',
      '  class t3 skipped',
    ]);
  });

  it('groups tasks of one status on one class line', () => {
    const g = mermaidGraph(plan(['A', 'B', 'C'], [undefined, 'in_progress', 'pending'], []));
    expect(g).toContain('  class t0,t2 pending');
    expect(g).toContain('  class t1 in_progress');
    expect(g).not.toContain('classDef completed');
  });

  it('escapes quotes, angle brackets and newlines in subjects', () => {
    expect(mermaidText('say "hi" <b>\nnow')).toBe('say #quot;hi#quot; #lt;b#gt; now');
    const g = mermaidGraph(plan(['Parse "<x>"\r\nfast'], [], []));
    expect(g).toContain('  t0["0: Parse #quot;#lt;x#gt;#quot; fast"]');
    expect(g.split('\n')).toHaveLength(4);
  });
});
