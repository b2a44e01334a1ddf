#!/usr/bin/env -S npx tsx
// The plan tool: `npx tsx scripts/plan.ts <command> --help`.
import { ownLayout } from '../src/adapters/layout.ts';
import { main, processIo, runProgram } from '../src/cli/command.ts';
import { planCommands } from '../src/cli/plan/commands.ts';
import { programName } from '../src/core/command-hint.ts';

await main(() => runProgram(programName('plan', ownLayout()), planCommands, process.argv.slice(2), processIo()));
