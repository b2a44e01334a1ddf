// `plan gate --serve`: the merge queue's gate process a session's steps start in the background.

import type { Command } from '../../command.ts';
import { RANGES } from '../../numeric-flags.ts';
import { EXIT } from '../../exit.ts';
import { loadPlan } from '../../load.ts';
import { isObjectId } from '../../../core/index.ts';
import { serveGate } from '../../../run/index.ts';
import { repoPlanOptions, str, whereOf } from './step-command.ts';

/**
 * `plan gate --serve`: the gate process `plan commit` starts in the background (not for people:
 * hidden from the help). It runs the test command on the candidates stacked on the integration
 * tip and writes the result to `.design/gate.json`; it takes no lock and writes no plan.
 */
export const gate: Command = {
  name: 'gate',
  summary: 'Internal: the background gate process of the in-session merge queue.',
  usage: '--serve --id ID --tip COMMIT --tasks N,… --command CMD --timeout-ms MS [--sandbox] [--repo DIR] [--plan FILE]',
  hidden: true,
  options: {
    ...repoPlanOptions,
    serve: { type: 'boolean', description: 'run one gate run and write its result next to the plan' },
    id: { type: 'string', valueName: 'ID', description: 'the run id the session recorded' },
    tip: { type: 'string', valueName: 'COMMIT', description: 'the integration tip the stack goes on' },
    tasks: { type: 'string', valueName: 'N,…', description: 'the candidates, in order (empty: the baseline)' },
    command: { type: 'string', valueName: 'CMD', description: 'the test command' },
    'timeout-ms': { type: 'string', valueName: 'MS', description: 'its time limit', range: RANGES.timeoutMs },
    sandbox: { type: 'boolean', description: 'run it in the sandbox' },
  },
  async run({ values, numbers }, io) {
    const id = str(values.id);
    const tip = str(values.tip);
    const command = str(values.command);
    const tasksText = str(values.tasks) ?? '';
    const tasks = tasksText === '' ? [] : tasksText.split(',').map(Number);
    const timeoutMs = numbers['timeout-ms'];
    if (
      values.serve !== true ||
      id === undefined ||
      !/^[\w-]+$/.test(id) ||
      tip === undefined ||
      !isObjectId(tip) ||
      command === undefined ||
      tasks.some((t) => !Number.isInteger(t) || t < 0) ||
      timeoutMs === undefined
    ) {
      io.err('plan gate: internal to plan commit (--serve --id ID --tip COMMIT --tasks N,… --command CMD --timeout-ms MS)');
      return EXIT.invalid;
    }
    const where = await whereOf(values, io.cwd);
    const repo = where.top ?? where.start;
    const planPath = where.planPath;
    const plan = await loadPlan(planPath).catch(() => null);
    if (plan === null) {
      io.err(`plan gate: cannot read the plan at ${planPath}`);
      return EXIT.invalid;
    }
    await serveGate({ repo, planPath, plan, env: io.env, id, tip, tasks, command, timeoutMs, sandbox: values.sandbox === true });
    return EXIT.ok;
  },
};
