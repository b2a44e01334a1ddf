// The plan tool's commands. Each lives in its own file; this list is the only place they meet.
import type { Command } from '../command.ts';
import { check } from './check.ts';
import { graph } from './graph.ts';
import { ready } from './ready.ts';
import { status } from './status.ts';
import { report } from './report.ts';
import { history } from './history.ts';
import { approve, reject, retry, revise, skip } from './interventions.ts';
import { declare } from './declare.ts';
import { commit, finalize, gate, next, setup } from './session/index.ts';
import { archive } from './archive.ts';
import { summary } from './summary.ts';
import { probe } from './probe.ts';
import { clean, landCommand } from './land.ts';
import { drain } from './drain.ts';

export const planCommands: Command[] = [check, status, graph, ready];
planCommands.push(report, history, approve, revise, reject, retry, skip, declare);
planCommands.push(summary, archive, setup, next, finalize, commit);
planCommands.push(probe, landCommand, clean, drain, gate);
