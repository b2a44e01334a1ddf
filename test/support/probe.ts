// The probe as the plan tool and a headless run call it: with the real commands, run in the
// probe's environment (`options.env`).

import { shellCommands } from '../../src/adapters/sandbox/commands.ts';
import type { Plan } from '../../src/core/plan/plan.ts';
import { type ProbeOptions, runProbe as probe } from '../../src/run/probe.ts';

export const runProbe = (plan: Plan, options: Omit<ProbeOptions, 'commands'>) => probe(plan, { ...options, commands: shellCommands(options.env) });
