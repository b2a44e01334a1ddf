// `npm run bench`: foreman's speed, measured here and never asserted in tests. See bench/README.md.
//
//   npm run bench                      everything (about a minute and a half on 2 cores)
//   npm run bench -- --only core       one section: core, schedule, gate, speculate, orchestrator, isolation, startup, hook, scale, limits (comma-separated)
//   npm run bench -- --quick           smaller sizes and fewer runs, for a quick look

import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { benchCore, CORE_SIZES } from './core.ts';
import { benchIsolation } from './isolation.ts';
import { benchGate, GATE_SEEDS } from './gate.ts';
import { benchOrchestrator } from './orchestrator.ts';
import { benchSchedule, SIM_SEEDS, SIM_SIZES } from './schedule.ts';
import { benchStartup } from './startup.ts';
import { benchHook } from './hook.ts';
import { benchScale, SCALE_CASES } from './scale.ts';
import { benchSpeculationReal, benchSpeculationSimulated, SPECULATE_SEEDS } from './speculate.ts';
import { benchLimits } from './limits.ts';
import { benchHosts } from './hosts.ts';

const SECTIONS = ['core', 'schedule', 'gate', 'speculate', 'orchestrator', 'isolation', 'startup', 'hook', 'scale', 'limits', 'hosts'] as const;
type Section = (typeof SECTIONS)[number];

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    quick: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help) {
  process.stdout.write(
    [
      'Usage: npm run bench -- [--only core,schedule,gate,speculate,orchestrator,isolation,startup,hook,scale,limits] [--quick]',
      '',
      '  core          the pure core (validation, overlaps, graph functions) on random plans of 200, 1000, 3000 tasks',
      '  schedule      simulated makespans: continuous vs rounds vs the lower bound, P = 2, 4, 8',
      '  gate          the merge queue simulated: gate runs per task, time in the gate and makespan at --gate-batch 1, 2, 4, 8, with and without a culprit',
      "  speculate     dependants built on their blockers' candidates: simulated makespan and waste at --speculate 0–16, gate 0.1–1.0× a task, 0 or 10% culprits; the real orchestrator on a chain of 6 × 2 s under a 1 s gate",
      '  orchestrator  scripts/execute.ts with the fake worker: 20 tasks of 200 ms, continuous vs rounds; one worker round-trip',
      '  isolation     what worktrees, capture, integration and landing cost: 200 instant tasks at concurrency 8 vs bare spawns of the worker',
      "  startup       the plan tool's start-up: the built bundle vs the sources under tsx (plan status, plan next on 200 tasks)",
      "  hook          the worker hook of every tool call: p50/p95 with no plan running, for the lead, for a worker's Write and Bash",
      '  scale         plan check on 20,000-task plans (a chain, a wide plan, a random one, a chain sharing one file): wall time and peak memory',
      '  limits        rate limits through the real CLI: 16 tasks at --concurrency 8 against a scripted API serving 2 at once and closed for 15 s (refusals a task, time against what the limit allows)',
      '  hosts         ssh hosts on real sshd with the fake worker: per-attempt overhead of a host slot over a local one; 24 chained tasks over 2 hosts × 2 slots against the lower bound',
      '  --quick       smaller plans and fewer runs',
      '',
    ].join('\n'),
  );
  process.exit(0);
}

const only = (values.only ?? SECTIONS.join(','))
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
for (const s of only) {
  if (!(SECTIONS as readonly string[]).includes(s)) {
    process.stderr.write(`bench: unknown section "${s}" (sections: ${SECTIONS.join(', ')})\n`);
    process.exit(2);
  }
}
const wanted = (s: Section) => only.includes(s);
const quick = values.quick === true;

const t0 = performance.now();
const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
process.stdout.write(`# foreman bench\n\nNode ${process.version}, ${cpus().length} × ${cpu}, ${process.platform}${quick ? ' (--quick)' : ''}\n`);

const section = (title: string, body: string) => process.stdout.write(`\n## ${title}\n\n${body}\n`);

if (wanted('core')) {
  section('Pure core on large random plans', benchCore(quick ? [200, 1000] : CORE_SIZES, { budgetMs: quick ? 400 : 1000 }));
}
if (wanted('schedule')) {
  section('Scheduling simulation: continuous vs rounds vs the lower bound', benchSchedule(quick ? [20, 50] : SIM_SIZES, quick ? 10 : SIM_SEEDS));
}
if (wanted('gate')) {
  section('The merge queue: batch sizes, culprits, the gate in the path', benchGate(quick ? 10 : GATE_SEEDS));
}
if (wanted('speculate')) {
  section('Speculative execution: simulated', benchSpeculationSimulated(quick ? 10 : SPECULATE_SEEDS));
  section('Speculative execution: the real orchestrator on a chain', await benchSpeculationReal({ reps: quick ? 1 : 5 }));
}
if (wanted('orchestrator')) {
  section('The real orchestrator with the fake worker', await benchOrchestrator({ reps: quick ? 1 : 3 }));
}
if (wanted('isolation')) {
  section('What isolation costs: per-task overhead over bare spawns', await benchIsolation(quick ? { tasks: 50, reps: 1 } : { tasks: 200, reps: 3 }));
}
if (wanted('startup')) {
  section("The plan tool's start-up: bundle vs tsx", await benchStartup({ reps: quick ? 3 : 7 }));
}
if (wanted('hook')) {
  section('The worker hook, per tool call', await benchHook({ reps: quick ? 15 : 40 }));
}
if (wanted('scale')) {
  const cases = quick ? SCALE_CASES.filter((c) => c.tasks <= 5_000) : SCALE_CASES;
  section('plan check on very large plans', await benchScale({ reps: quick ? 1 : 3, cases }));
}
if (wanted('limits')) {
  section('Rate limits through the real CLI', await benchLimits({ quick }));
}
if (wanted('hosts')) {
  section('ssh hosts: per-attempt overhead and a plan over 2 hosts × 2 slots', await benchHosts({ reps: quick ? 1 : 3, quick }));
}
process.stdout.write(`\n(bench took ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
