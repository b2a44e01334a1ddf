// `plan land` and `plan clean`: land the plan's integrated work now, as a run's end does, and
// remove its worktrees. Both take the plan lock (exit 3 while a run holds it). `land` exits 0
// when the work landed (or was already there), 1 when something of the person's blocks it, 2 when
// there is nothing to land (the plan never ran, or its ref is gone).

import { acquireLock, currentLockInfo, Git, lockHeldMessage, ownLayout } from '../../adapters/index.ts';
import { approvalHint, commandHint, landingNotice, type LandMode, noCommitLine, ok, type Result, shellWord } from '../../core/index.ts';
import {
  cleanOnHosts,
  cleanPlans,
  describeTargetProblem,
  findLandTarget,
  type LandBlocked,
  type LandReport,
  landTarget,
  type LandTarget,
  planIdsToClean,
  repositoryId,
  runPathOf,
} from '../../run/index.ts';
import { cleanHostOptions, describeHostCleaning, hostCleaningJson, hostsOf } from '../host-flags.ts';
import type { Command, Io } from '../command.ts';
import { CliError, EXIT, type ExitCode, gitFailedError } from '../exit.ts';
import { planPathFrom, planRepository } from '../load.ts';
import { jsonOption, planOption } from './options.ts';

const noCommitOption = {
  'no-commit': {
    type: 'boolean' as const,
    description: 'land the work in your files as uncommitted changes (as `execute --no-commit` does) instead of commits on your branch',
  },
};

/** `1.4 MB`: a disk size for people. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The repository holding the plan, or exit 2 (outside any, or with no commit yet: there is nothing a plan could have landed on or made). */
async function repositoryFor(planPath: string, command: string): Promise<string> {
  const repo = await planRepository(planPath);
  if (repo === null) throw new CliError(EXIT.invalid, [`${command}: ${planPath} is not in a git repository`]);
  if ((await new Git(repo).headCommit()) === null) throw new CliError(EXIT.invalid, [`${command}: ${noCommitLine(repo)}`]);
  return repo;
}

/** Runs `body` holding the lock of the plan that runs at `runPath`; exit 3 while a run holds it. */
async function withLock<T>(runPath: string, command: string, body: () => Promise<T>): Promise<T> {
  const lock = await acquireLock(runPath, currentLockInfo(`plan ${command}`));
  if (!lock.ok) throw new CliError(EXIT.cannotRun, [`${command}: ${lockHeldMessage(lock.error.holder)}`]);
  try {
    return await body();
  } finally {
    await lock.value.release();
  }
}

/** What a landing did, in lines for people; and its exit code (0 landed or up to date, 1 blocked, 4 landed but git could not finish the plan). */
export function describeLanding(target: LandTarget, outcome: Result<LandReport, LandBlocked>, io: Io): ExitCode {
  const resumed = outcome.ok ? outcome.value.resumed : outcome.error.resumed;
  // Said as a run says it.
  const resumedNotice = resumed === null ? null : landingNotice(ok(resumed), { ref: target.ref, layout: ownLayout(), where: null, resumed: true });
  if (resumedNotice !== null) io.out(resumedNotice.message);
  if (!outcome.ok) {
    for (const line of outcome.error.lines) io.err(line);
    return EXIT.incomplete;
  }
  const report = outcome.value;
  const where = report.mode === 'worktree' ? 'your files, uncommitted' : (report.branch ?? 'the detached HEAD');
  const commit = report.landed.to.slice(0, 12);
  if (report.landed.upToDate || report.landed.paths.length === 0)
    io.out(`nothing new to land: ${where === 'your files, uncommitted' ? 'your files hold' : `${where} holds`} everything on ${target.ref} (${commit})`);
  else io.out(`landed ${plural(report.landed.paths.length, 'file')} on ${where} (${commit}): ${report.landed.paths.join(', ')}`);
  if (report.cleanedUp)
    io.out(`the plan is finished: its worktrees and refs were removed${report.archivedTo === null ? '' : `, and the plan was moved to ${report.archivedTo}`}`);
  if (report.unfinished !== null) {
    io.err(report.unfinished);
    return EXIT.gitFailed;
  }
  return EXIT.ok;
}

/** The landing as JSON (the same facts as `describeLanding`). */
export function landingJson(target: LandTarget, outcome: Result<LandReport, LandBlocked>): Record<string, unknown> {
  const resumed = outcome.ok ? outcome.value.resumed : outcome.error.resumed;
  const common = {
    plan: target.planPath,
    planId: target.planId,
    ref: target.ref,
    archived: target.archived,
    resumed: resumed === null ? null : { files: resumed.paths },
  };
  if (!outcome.ok) return { ...common, landed: false, problem: { kind: outcome.error.problem.kind, lines: outcome.error.lines } };
  const report = outcome.value;
  return {
    ...common,
    landed: true,
    mode: report.mode === 'worktree' ? 'no-commit' : 'commit',
    branch: report.branch,
    upToDate: report.landed.upToDate || report.landed.paths.length === 0,
    commit: report.landed.to,
    files: report.landed.paths,
    cleanedUp: report.cleanedUp,
    archivedTo: report.archivedTo,
    problem: report.unfinished === null ? null : { kind: 'git-failed', lines: [report.unfinished] },
  };
}

export const landCommand: Command = {
  name: 'land',
  summary:
    "Land the plan's integrated work (refs/foreman/<planId>) on your branch now, as the end of a run does: only when no file it updates has a change of yours. Exit 0 landed or up to date, 1 blocked (it says by what), 2 nothing to land, 4 git failed.",
  usage: '[--plan FILE] [--no-commit] [--json]',
  options: { ...planOption, ...noCommitOption, ...jsonOption },
  async run({ values }, io) {
    const planPath = await planPathFrom(values, io.cwd);
    const repo = await repositoryFor(planPath, 'land');
    const mode: LandMode = values['no-commit'] === true ? 'worktree' : 'commit';
    return withLock(runPathOf(planPath), 'land', async () => {
      const target = await findLandTarget(repo, planPath, typeof values.plan === 'string');
      if (!target.ok) throw new CliError(target.error.kind === 'git-failed' ? EXIT.gitFailed : EXIT.invalid, [`land: ${describeTargetProblem(target.error)}`]);
      if (target.value.archived && !values.json) io.out(`landing the archived plan ${target.value.planPath} (${target.value.plan.goal})`);
      const outcome = await landTarget(repo, target.value, { mode, env: io.env });
      if (values.json) {
        io.out(JSON.stringify(landingJson(target.value, outcome)));
        return !outcome.ok ? EXIT.incomplete : outcome.value.unfinished === null ? EXIT.ok : EXIT.gitFailed;
      }
      return describeLanding(target.value, outcome, io);
    });
  },
};

export const clean: Command = {
  name: 'clean',
  summary:
    "Remove the plan's worktrees now (and those of archived plans), with the refs of archived plans whose work is all on your branch; never a ref holding work not landed. With --host, its run folders on those hosts too.",
  usage: '[--plan FILE] [--host URL]... [--hosts FILE] [--json]',
  options: { ...planOption, ...cleanHostOptions, ...jsonOption },
  async run({ values }, io) {
    const planPath = await planPathFrom(values, io.cwd);
    const repo = await repositoryFor(planPath, 'clean');
    const hosts = await hostsOf(values, undefined, io);
    return withLock(runPathOf(planPath), 'clean', async () => {
      const result = await cleanPlans(repo, planPath, io.env);
      if (!result.ok) throw gitFailedError("list or delete the plans' refs", result.error);
      const cleaned = result.value;
      const onHosts = hosts === null ? null : await cleanOnHosts(hosts.hosts, repositoryId(repo), await planIdsToClean(planPath), io.env);
      // A host not cleaned is named; the rest is cleaned all the same, and running it again once the host answers finishes it.
      const code = onHosts?.some((host) => 'failed' in host) ? EXIT.limited : EXIT.ok;
      if (values.json) {
        io.out(JSON.stringify({ plans: cleaned, ...(onHosts === null ? {} : { hosts: onHosts.map(hostCleaningJson) }) }));
        return code;
      }
      if (cleaned.length === 0) io.out('nothing to clean: no plan of this directory has worktrees or refs');
      for (const plan of cleaned) {
        const which = plan.archived ? `the archived plan ${plan.planPath}` : 'the plan';
        io.out(
          plan.worktrees === 0
            ? `${which}: no worktrees`
            : `${which}: removed ${plural(plan.worktrees, 'worktree')} (${formatBytes(plan.bytes)}) from ${plan.dir}`,
        );
        for (const ref of plan.deletedRefs) io.out(`  deleted ${ref}: everything on it is on your branch`);
        for (const kept of plan.keptRefs) {
          io.out(
            kept.kind === 'awaiting'
              ? `  kept ${kept.ref}: work awaiting approval (${approvalHint('N', ownLayout())} while the plan is current)`
              : `  kept ${kept.ref}: it holds ${kept.commits === null ? 'commits' : plural(kept.commits, 'commit')} not on your branch; land ${kept.commits === 1 ? 'it' : 'them'} with \`${commandHint('plan', `land${plan.archived ? ` --plan ${shellWord(plan.planPath)}` : ''}`, ownLayout())}\`, or by hand with \`git merge --ff-only ${kept.ref}\``,
          );
        }
      }
      for (const line of (onHosts ?? []).flatMap(describeHostCleaning)) io.out(line);
      return code;
    });
  },
};
