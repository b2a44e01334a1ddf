// The real Claude Code CLI runs each Bash tool command in a session of its own, outside the
// worker's process group. When a run dies by kill -9, the next run must end those commands too,
// not only the worker's group.

import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { killOrphans, ProcessRegistry, recorded } from '../../src/adapters/processes/orphans.ts';
import { groupAlive } from '../../src/adapters/processes/processes.ts';
import { runWorker } from '../../src/adapters/worker/worker.ts';
import { type ModelServer, scenario, startModelServer, text, toolUse } from '../support/model-server.ts';
import { claudeBin, claudeEnv, tempHome } from '../support/real-claude.ts';
import { waitFor } from '../support/wait.ts';

const MARK = `foreman-orphan-mark-${process.pid}`;
let server: ModelServer;
let dir: string;
let home: string;

beforeAll(async () => {
  server = await startModelServer({
    scenarios: [
      scenario({
        match: 'TASK-MARKER: long-bash',
        turns: [[toolUse('Bash', { command: `node -e "setTimeout(() => {}, 300000)" ${MARK}` })], [text('COMPLETED: done')]],
      }),
    ],
  });
  dir = await mkdtemp(join(tmpdir(), 'foreman-orphans-real-'));
  home = await tempHome();
});

afterAll(async () => {
  for (const p of withMark()) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await server?.close();
  await rm(dir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

/** Live processes whose command line carries the mark (the Bash command itself, not its shell). */
function withMark(): Array<{ pid: number; pgrp: number }> {
  const found: Array<{ pid: number; pgrp: number }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.endsWith('node') !== true || !cmd.includes(MARK)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z') found.push({ pid: Number(entry), pgrp: Number(fields[2]) });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

it('a run after a crash ends the Bash commands of the orphaned worker, which run outside its group', async () => {
  const registryPath = join(dir, 'workers.json');
  const registry = new ProcessRegistry(registryPath);
  const env = claudeEnv(server.url, home);
  let workerGroup = 0;
  const running = recorded(registry, { kind: 'worker', task: 0 }, (hooks) =>
    runWorker({
      taskIndex: 0,
      attempt: 1,
      prompt: 'Run the long command.\nTASK-MARKER: long-bash\n',
      model: 'haiku',
      cwd: dir,
      claudeBin,
      permissionMode: 'dontAsk',
      allowedTools: ['Bash'],
      timeoutMs: 120_000,
      logPath: join(dir, 'worker-0.log'),
      env,
      ...hooks,
      onSpawn: (g, marker) => {
        workerGroup = g;
        hooks.onSpawn?.(g, marker);
      },
    }),
  );
  await waitFor('the Bash command to start', () => withMark().length > 0);
  const [command] = withMark();
  // Seen on 2.1.330: the Bash command is not in the worker's process group.
  expect(command!.pgrp).not.toBe(workerGroup);

  // What the next run does first, as if this one had been killed with kill -9.
  const killed = await killOrphans(registryPath);
  expect(killed.map((r) => [r.kind, r.pgid])).toEqual([['worker', workerGroup]]);
  expect(groupAlive(workerGroup)).toBe(false);
  expect(groupAlive(command!.pgrp)).toBe(false);
  expect(withMark()).toEqual([]);
  const run = await running;
  expect(run.outcome.kind).toBe('failed');
});
