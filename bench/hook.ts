// The plugin's PreToolUse hook, as Claude Code pays it: one process per tool call of every session
// that has the plugin, started through hooks/pre-tool-use (the built plugin's). p50 and p95 of the
// wall time, from spawn to exit, for the calls that matter:
//   - any call while no session runs a plan in-session (the launcher's `test -d`, no node);
//   - the lead's own call in a session running a plan (the launcher reads the input and, finding no
//     `agent_id` in it, exits in sh: no node);
//   - a worker's Write of a declared file, and its Bash (node starts the bundled hook: the person's
//     rules read, the sandbox settings written, the command rewritten).
// For scale, the same for `node -e 0`. The bundle is the committed one: `npm run build` first.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindWorker, handOutRoot, writeHandOut } from '../src/adapters/worker/hand-out.ts';
import type { HandOut } from '../src/core/sandbox/worker-hook.ts';
import { repoRoot } from '../test/support/execute.ts';
import { median, ms, progress, quantile, table } from './timing.ts';

const launcher = join(repoRoot, 'plugin/hooks/pre-tool-use');

function wall(file: string, args: string[], input: string, env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(file, args, { input, env, encoding: 'utf8' });
  const elapsed = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${file} exited ${r.status}: ${r.stderr}`);
  return elapsed;
}

export async function benchHook(o: { reps?: number } = {}): Promise<string> {
  if (!existsSync(join(repoRoot, 'plugin/dist/hook.mjs'))) return 'No plugin/dist/hook.mjs: run `npm run build` first.';
  const reps = o.reps ?? 40;
  const base = await realpath(await mkdtemp(join(tmpdir(), 'foreman-bench-hook-')));
  try {
    const repo = join(base, 'repo');
    const worktree = join(repo, '.claude/worktrees/agent-w1');
    await mkdir(join(worktree, 'src'), { recursive: true });
    const busy = { HOME: join(base, 'home'), PATH: process.env.PATH };
    const idle = { HOME: join(base, 'idle-home'), PATH: process.env.PATH };
    const handOut: HandOut = {
      version: 1,
      session: 'bench',
      repo,
      planPath: join(repo, '.design/plan.json'),
      sandbox: { available: true, network: [] },
      tasks: [{ index: 0, attempt: 1, subject: 'bench', promptFile: join(repo, '.design/prompts/task-0.md'), files: ['src/a.ts'] }],
    };
    const root = handOutRoot(busy);
    await writeHandOut(root, handOut);
    await bindWorker(root, handOut, 'w1', handOut.tasks[0]!, worktree);
    const call = (agent: string | null, tool: string, input: Record<string, unknown>) =>
      JSON.stringify({
        session_id: 'bench',
        ...(agent ? { agent_id: agent } : {}),
        cwd: agent ? worktree : repo,
        hook_event_name: 'PreToolUse',
        tool_name: tool,
        tool_input: input,
      });
    const cases: Array<{ what: string; run: () => number }> = [
      { what: 'any call, no session running a plan (test -d)', run: () => wall(launcher, [], call(null, 'Read', { file_path: join(repo, 'x') }), idle) },
      { what: "the lead's own call, a plan running (sh, no node)", run: () => wall(launcher, [], call(null, 'Bash', { command: 'ls' }), busy) },
      {
        what: "a worker's Write of a declared file",
        run: () => wall(launcher, [], call('w1', 'Write', { file_path: join(worktree, 'src/a.ts'), content: 'x' }), busy),
      },
      {
        what: "a worker's Bash (rules read, settings written, command rewritten)",
        run: () => wall(launcher, [], call('w1', 'Bash', { command: 'npm test' }), busy),
      },
      { what: 'for scale: node -e 0', run: () => wall(process.execPath, ['-e', '0'], '', busy) },
    ];
    const rows: string[][] = [];
    for (const c of cases) {
      progress(`hook: ${c.what}`);
      c.run();
      const samples = Array.from({ length: reps }, () => c.run());
      rows.push([c.what, ms(median(samples)), ms(quantile(samples, 0.95))]);
    }
    return [table(['call', 'p50', 'p95'], rows, ['l', 'r', 'r']), '', `${reps} runs each, after one warm-up; wall time from spawn to exit.`].join('\n');
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}
