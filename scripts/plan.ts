#!/usr/bin/env -S npx tsx
// The plan tool: `npx tsx scripts/plan.ts <command> --help`.
import { main, processIo, runProgram } from '../src/cli/command.ts';
import { planCommands } from '../src/cli/plan/index.ts';

await main(() => runProgram('plan.ts', planCommands, process.argv.slice(2), processIo()));
