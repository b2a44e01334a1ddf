#!/usr/bin/env -S npx tsx
// The headless orchestrator: `npx tsx scripts/execute.ts --help`.
import { main, processIo, runCommand } from '../src/cli/command.ts';
import { executeCommand } from '../src/cli/execute.ts';

await main(() => runCommand('execute.ts', executeCommand, process.argv.slice(2), processIo()));
