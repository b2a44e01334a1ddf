#!/usr/bin/env -S npx tsx
// `npm run demo`: a first run of foreman for a newcomer, on this machine, in under a minute.
//
// It creates a throwaway git repository holding a tiny JavaScript library (demo/sample/), writes
// a 6-task plan for it (demo/scenario.ts), and runs the real orchestrator (scripts/execute.ts)
// with real Claude Code workers (node_modules/.bin/claude). The workers talk to a scripted
// Messages API server started by this script on 127.0.0.1 (test/support/model-server.ts): no
// credentials are needed and nothing leaves the machine. The scripted "model" answers with real
// tool calls, so the CLI really writes, edits and tests the files; the orchestrator really
// schedules, verifies with acceptance checks, retries and commits.

import { type ChildProcess, spawn } from 'node:child_process';
import { access, cp, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { demoPlan, demoScenarios, RETRY_TASK } from '../demo/scenario.ts';
import { type Command, type Io, main, type Numbers, processIo, runCommand } from '../src/cli/command.ts';
import { RANGES } from '../src/cli/numeric-flags.ts';
import { CliError, EXIT, type ExitCode, usageError } from '../src/cli/exit.ts';
import { commandHint, type Layout, shellWord } from '../src/core/command-hint.ts';
import { formatDuration } from '../src/core/format.ts';
import { SCHEDULE_POLICIES } from '../src/core/plan/schedule.ts';
import { validatePlan, withDefaults } from '../src/core/plan/validate.ts';
import { startModelServer } from '../test/support/model-server.ts';
import { claudeEnv, tempHome } from '../test/support/real-claude.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsxLoader = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
const claudeBin = join(root, 'node_modules/.bin/claude');
/** The commands it shows, as a person runs them from anywhere (the demo repository too): the checkout's launcher. */
const launcherLayout: Layout = { kind: 'checkout', launcher: join(root, 'bin/foreman') };

const demoCommand: Command = {
  name: 'demo',
  summary: [
    'Run foreman once, end to end, on a throwaway sample repository: a 6-task plan (dependencies, two',
    'tasks that change the same file, a task whose first attempt fails its acceptance check and is',
    'retried) executed by the real orchestrator (scripts/execute.ts) with real Claude Code workers.',
    'The workers talk to a scripted model server on 127.0.0.1 started by this script: no account or',
    'API key is needed and nothing leaves this machine. At the end it prints the commits the run',
    'made and the run report. The repository is deleted afterwards unless --keep is given (or the',
    "run did not complete). Exits with the orchestrator's exit code.",
  ].join('\n'),
  usage: '-- [--keep] [--fast] [--concurrency N] [--schedule continuous|rounds]   (or: npx tsx scripts/demo.ts [options])',
  options: {
    keep: { type: 'boolean', description: 'keep the demo repository and print where it is' },
    fast: { type: 'boolean', description: 'answer every model turn at once (no pauses to watch the live view)' },
    concurrency: { type: 'string', valueName: 'N', description: 'workers at once (default 4)', range: RANGES.workers },
    schedule: { type: 'string', valueName: 'POLICY', description: `passed to execute.ts (one of ${SCHEDULE_POLICIES.join(', ')}; default continuous)` },
  },
  run: ({ values, numbers }, io) => demo(values, numbers, io),
};

/** Run a child with our terminal; resolves its exit code (128 + n for a signal). */
function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; onSpawn?: (c: ChildProcess) => void } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? root, env: opts.env ?? process.env, stdio: ['ignore', 'inherit', 'inherit'] });
    opts.onSpawn?.(child);
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(code ?? (signal === 'SIGINT' ? 130 : signal === 'SIGTERM' ? 143 : 1)));
  });
}

function git(dir: string, args: string[]): Promise<number> {
  return run('git', ['-C', dir, ...args]);
}

const gitQuiet = (dir: string, args: string[]) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn('git', ['-C', dir, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`git ${args.join(' ')}: ${err.trim()}`))));
  });

/** The sample library, committed as the repository's first commit. */
async function createRepository(): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'foreman-demo-')));
  await cp(join(root, 'demo/sample'), dir, { recursive: true });
  await gitQuiet(dir, ['init', '-q', '-b', 'main']);
  await gitQuiet(dir, ['config', 'user.name', 'foreman demo']);
  await gitQuiet(dir, ['config', 'user.email', 'demo@foreman.invalid']);
  await gitQuiet(dir, ['config', 'commit.gpgsign', 'false']);
  await gitQuiet(dir, ['add', '-A']);
  await gitQuiet(dir, ['commit', '-q', '-m', 'textkit 0.1.0: an empty entry point and the wordCount specification']);
  return dir;
}

async function writeDemoPlan(dir: string): Promise<string> {
  const checked = validatePlan(demoPlan());
  if (!checked.ok) throw new Error(`the demo plan is invalid:\n${checked.error.join('\n')}`);
  // What `plan.ts check --fix` would save: defaults written out, file overlaps computed.
  const plan = withDefaults(checked.value);
  const path = join(dir, '.design/plan.json');
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(plan, null, 2)}\n`);
  return path;
}

async function demo(values: Record<string, unknown>, numbers: Numbers, io: Io): Promise<ExitCode> {
  const keep = values.keep === true;
  const pace = { factor: values.fast === true ? 0 : 1 };
  const concurrency = numbers.concurrency;
  const schedule = typeof values.schedule === 'string' ? values.schedule : undefined;
  if (schedule !== undefined && !(SCHEDULE_POLICIES as readonly string[]).includes(schedule)) {
    throw usageError(`--schedule expects one of ${SCHEDULE_POLICIES.join(', ')}, got "${schedule}"`);
  }
  try {
    await access(claudeBin);
  } catch {
    throw new CliError(EXIT.cannotRun, [`the Claude Code CLI is not installed at ${relative(io.cwd, claudeBin)}: run \`npm ci\` in ${root} first`]);
  }

  const started = Date.now();
  const say = (...lines: string[]) => io.out(lines.join('\n'));
  const heading = (t: string) => say('', io.isTTY && !('NO_COLOR' in io.env) ? `\x1b[1m== ${t}\x1b[22m` : `== ${t}`, '');

  const dir = await createRepository();
  const planPath = await writePlanSafely(dir);
  const home = await tempHome();
  const server = await startModelServer({ scenarios: demoScenarios(pace) });
  let code = 1;
  let child: ChildProcess | undefined;
  const onTerm = () => child?.kill('SIGTERM');
  // Ctrl-C reaches the orchestrator directly (same terminal process group) and it stops cleanly;
  // this script only has to stay alive, serving its workers, until the orchestrator has exited.
  const onInt = () => undefined;
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    heading('foreman demo');
    say(
      `A throwaway git repository with a tiny library, textkit:  ${dir}`,
      `Its plan:  ${relative(dir, planPath)}  (6 tasks; see demo/scenario.ts)`,
      '',
      '  0  Add slugify()                                   ─┐',
      '  1  Add truncate()                                   │ start at once',
      `  ${RETRY_TASK}  Implement wordCount() to the spec               ─┘ attempt 1 fails its acceptance check; attempt 2 passes`,
      '  3  Export slugify from the entry point    (after 0) ┐ both change src/index.js:',
      '  4  Export truncate from the entry point   (after 1) ┘ never at the same time',
      '  5  Export wordCount, document the API     (after 2, 3, 4)',
      '',
      'Workers: the real Claude Code CLI, talking to a scripted model on',
      `${server.url} (started by this script; no API key, nothing leaves this machine).`,
      'Every acceptance check really runs (node --test, node -e) in the repository.',
      "The costs it shows are simulated: the scripted model's token counts, priced by Claude Code; nothing is billed.",
    );

    const args = ['--import', tsxLoader, join(root, 'scripts/execute.ts'), '--repo', dir, '--claude-bin', claudeBin];
    if (concurrency !== undefined) args.push('--concurrency', String(concurrency));
    if (schedule !== undefined) args.push('--schedule', schedule);
    heading(
      commandHint(
        'execute',
        `--repo ${shellWord(dir)} --claude-bin ${shellWord(claudeBin)}${concurrency !== undefined ? ` --concurrency ${concurrency}` : ''}${schedule ? ` --schedule ${schedule}` : ''}`,
        launcherLayout,
      ),
    );
    code = await run(process.execPath, args, { env: claudeEnv(server.url, home), onSpawn: (c) => (child = c) });
    child = undefined;

    const turns = server.turns();
    const workers = new Set(turns.map((t) => t.sessionId)).size;
    const retryPrompt = turns.find((t) => t.assistantTurns === 0 && t.prompt.includes('TASK-MARKER: word-count') && t.prompt.includes('This is attempt 2'));
    heading('What the scripted model saw');
    say(
      `${turns.length} model turns from ${workers} Claude Code worker processes.`,
      "The cost figures above (the run's total, each task's) are simulated: Claude Code priced the tokens the",
      'scripted model said it used at the rates of the model named; no account was billed.',
    );
    if (retryPrompt) {
      const line = retryPrompt.prompt.split('\n').find((l) => l.includes('This is attempt 2')) ?? '';
      say(`The retry: task ${RETRY_TASK}'s second prompt says "${line.trim()}"`, 'and quotes the acceptance check that failed, so the worker can do better.');
    } else {
      say(`Task ${RETRY_TASK} was not retried in this run.`);
    }

    heading(`The commits the run made (git -C ${dir} log)`);
    await git(dir, ['--no-pager', 'log', '--stat', '--format=%C(auto)%h %s%n%(trailers:key=Foreman-Tasks,key=Foreman-Result,separator=%x0a)']);

    heading(`The run report (${commandHint('plan', `report --plan ${shellWord(planPath)}`, launcherLayout)})`);
    await run(process.execPath, ['--import', tsxLoader, join(root, 'scripts/plan.ts'), 'report', '--plan', planPath]);
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    await server.close();
    await rm(home, { recursive: true, force: true });
  }

  heading('Done');
  say(
    `The orchestrator exited with ${code}${code === 0 ? ' (every task completed and committed)' : ''}; the demo took ${formatDuration(Date.now() - started)}.`,
  );
  if (keep || code !== 0) {
    say(
      `The demo repository is kept${keep ? '' : ' (the run did not complete)'}: ${dir}`,
      `  cd ${shellWord(dir)}`,
      '  git log && node --test',
      `  ${commandHint('plan', 'history', launcherLayout)}`,
      `Delete it with: rm -rf ${dir}`,
    );
    if (code !== 0) say("(Its workers' scripted model stopped with this script, so this run cannot be resumed; run the demo again instead.)");
  } else {
    await rm(dir, { recursive: true, force: true });
    say(`The demo repository ${dir} was deleted; run \`npm run demo -- --keep\` to keep it and look around.`);
  }
  return code as ExitCode;
}

/** Write the plan; on a failure, leave nothing behind. */
async function writePlanSafely(dir: string): Promise<string> {
  try {
    return await writeDemoPlan(dir);
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

await main(() => runCommand('npm run demo', demoCommand, process.argv.slice(2), processIo()));
