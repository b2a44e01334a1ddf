// `npm run demo` end to end, as a newcomer runs it but without a terminal (so the orchestrator
// prints plain lines): the real orchestrator, the real Claude Code CLI, the scripted model.

import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tsxLoader } from '../support/execute.ts';

const demoScript = join(repoRoot, 'scripts/demo.ts');

async function runDemo(args: string[]) {
  const r = await execa('node', ['--import', tsxLoader, demoScript, ...args], {
    cwd: repoRoot,
    reject: false,
    env: { NO_COLOR: '1' },
    timeout: 150_000,
    stdin: 'ignore',
  });
  return { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
}

describe('npm run demo', () => {
  it('runs the sample plan with real workers: commits, a retry, a report with a Gantt chart; deletes its repository', { timeout: 180_000 }, async () => {
    // --fast: the scripted model answers at once instead of pausing for a person to watch the
    // live view; the workers, the run and what it prints are the same.
    const r = await runDemo(['--fast']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const out = r.stdout;

    // The orchestrator's plain log: every task completed, task 2 only on its second attempt.
    for (let t = 0; t < 6; t++) expect(out).toMatch(new RegExp(`^\\S+ task ${t} completed \\(attempt ${t === 2 ? 2 : 1},`, 'm'));
    expect(out).toMatch(/^\S+ task 2 failed, will retry \(attempt 1,.*acceptance check failed \(the wordCount specification passes\)/m);
    expect(out).toMatch(/^\S+ task 2 started \(attempt 2, haiku\)/m);
    expect(out).toContain('The retry: task 2\'s second prompt says "This is attempt 2 of 3.');
    expect(out).toMatch(/run \S+ finished: completed \(all-done\)/);
    // Its cost figures are the scripted model's tokens priced, and it says so.
    expect(out).toMatch(/^\s+cost: \$\d/m);
    expect(out).toContain('The costs it shows are simulated');
    expect(out).toContain("The cost figures above (the run's total, each task's) are simulated");

    // The commits, with their trailers: every task is in one of them.
    const log = out.slice(out.indexOf('== The commits the run made'), out.indexOf('== The run report'));
    expect(log).toMatch(/^[0-9a-f]{7,} foreman: round 1: /m);
    const committed = [...log.matchAll(/^Foreman-Tasks: ([\d,]+)$/gm)].flatMap((m) => m[1]!.split(',').map(Number));
    expect(committed.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(log).toContain('src/word-count.js');
    expect(log).toMatch(/^[0-9a-f]{7,} textkit 0\.1\.0: /m);

    // The report of the archived plan: all done, the failed first attempt, and the timeline.
    const report = out.slice(out.indexOf('== The run report'));
    expect(report).toMatch(/^# foreman run /m);
    expect(report).toContain('**Outcome:** completed (all-done)');
    expect(report).toMatch(/^\| 2 \| Implement wordCount\(\) .* \| completed \| 2 \|/m);
    expect(report).toContain('```mermaid\ngantt\n');
    expect(report).toMatch(/attempt 1 failed \(retried\).*:crit, t2a1,/);

    // Deleted afterwards (no --keep).
    const dir = /The demo repository (\S+) was deleted/.exec(out)?.[1];
    expect(dir).toMatch(/foreman-demo-/);
    expect(existsSync(dir!)).toBe(false);
  });

  it('--keep keeps the repository, and every command of its closing hint runs from there', { timeout: 180_000 }, async () => {
    const r = await runDemo(['--fast', '--keep']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const closing = r.stdout.slice(r.stdout.indexOf('The demo repository is kept: ')).trimEnd().split('\n');
    const dir = /^The demo repository is kept: (\S+)$/.exec(closing[0]!)?.[1];
    expect(dir).toMatch(/foreman-demo-/);
    try {
      // `cd DIR`, then the commands to run there; the last line says how to delete it.
      expect(closing[1]).toBe(`  cd ${dir}`);
      expect(closing.at(-1)).toBe(`Delete it with: rm -rf ${dir}`);
      const commands = closing.slice(2, -1).map((line) => line.trim());
      expect(commands).toEqual(['git log && node --test', `${join(repoRoot, 'bin/foreman')} plan history`]);
      for (const command of commands) {
        const ran = await execa('bash', ['-c', command], { cwd: dir, reject: false, stdin: 'ignore', timeout: 60_000 });
        expect({ command, exitCode: ran.exitCode, stderr: ran.stderr }).toEqual({ command, exitCode: 0, stderr: '' });
        if (command.endsWith('plan history')) expect(ran.stdout).toMatch(/completed/);
      }
    } finally {
      await rm(dir!, { recursive: true, force: true });
    }
  });

  it('explains itself with --help', async () => {
    const r = await runDemo(['--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Usage: npm run demo -- [--keep]');
    expect(r.stdout).toContain('--keep');
    expect(r.stdout).toMatch(/nothing leaves this\s+machine/);
  });
});
