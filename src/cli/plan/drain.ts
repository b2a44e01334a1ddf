// `plan.ts drain`: ask the headless run working on a plan, from another terminal, to finish what is
// running, start nothing new, integrate and land, and exit resumable. It reaches the run through
// the plan's lock: the lock names the run's pid and host, and the run drains on SIGTERM (a second
// SIGTERM, or Ctrl-C, stops it at once). Only a run on this host can be reached this way.

import { askDrain, forgetDrainAsked, ownLayout, readLock } from '../../adapters/index.ts';
import { assertNever, commandHint } from '../../core/index.ts';
import type { Command } from '../command.ts';
import { CliError, EXIT } from '../exit.ts';
import { planPathFrom } from '../load.ts';
import { planOption } from './options.ts';

/** The command a headless run records in the plan's lock. */
const HEADLESS_RUN = 'execute';

export const drain: Command = {
  name: 'drain',
  summary:
    "Ask the headless run working on the plan to finish what is running, start nothing new, integrate and land its work, and exit (resumable): sends SIGTERM to the run the plan's lock names, once. Exit 0 asked (or asked already), 2 no run to drain, 3 the run cannot be reached from here.",
  usage: '[--plan FILE]',
  options: { ...planOption },
  async run({ values }, io) {
    const path = await planPathFrom(values, io.cwd);
    const status = await readLock(path);
    switch (status.state) {
      case 'free':
      case 'stale':
      case 'unparseable':
        throw new CliError(EXIT.invalid, [`no run is working on ${path}: nothing to drain`]);
      case 'foreign':
        throw new CliError(EXIT.cannotRun, [
          `the run working on ${path} is on host ${status.holder.host} (pid ${status.holder.pid}): run \`${commandHint('plan', 'drain', ownLayout())}\` there, or send that process SIGTERM`,
        ]);
      case 'live': {
        const holder = status.holder;
        if (holder.command !== HEADLESS_RUN) {
          throw new CliError(EXIT.invalid, [
            `${holder.command ?? 'a command'} (pid ${holder.pid}) holds ${path} for a moment, not a headless run: nothing to drain. An in-session run (/foreman:execute) stops when its lead stops asking for rounds`,
          ]);
        }
        const stopAtOnce = `Ctrl-C in its terminal (or \`kill ${holder.pid}\` once more) stops it at once`;
        // A second SIGTERM stops the run at once: a drain asked already (by this command or
        // another one at the same moment) is not asked again.
        const asked = await askDrain(path, holder);
        if (!asked.ok) throw new CliError(EXIT.cannotRun, [`${asked.error}: no signal sent; run it again`]);
        if (asked.value.kind === 'asked-already') {
          io.out(
            `the run (pid ${holder.pid}) was asked to drain already, at ${asked.value.at}: it is finishing what it was running. Watch it with \`${commandHint('plan', 'status', ownLayout())}\`; ${stopAtOnce}`,
          );
          return EXIT.ok;
        }
        try {
          process.kill(holder.pid, 'SIGTERM');
        } catch (e) {
          await forgetDrainAsked(path);
          throw new CliError(EXIT.cannotRun, [`could not signal the run (pid ${holder.pid}): ${(e as Error).message}`]);
        }
        io.out(
          `asked the run (pid ${holder.pid}, started ${holder.startedAt}) to drain: it finishes the tasks it is running, starts nothing new, integrates and lands their work, and exits; run it again to resume. Watch it with \`${commandHint('plan', 'status', ownLayout())}\`; ${stopAtOnce}`,
        );
        return EXIT.ok;
      }
      default:
        return assertNever(status, 'lock status');
    }
  },
};
