#!/usr/bin/env -S npx tsx
// The headless orchestrator: `npx tsx scripts/execute.ts --help`.
import { ownLayout } from '../src/adapters/layout.ts';
import { main, processIo, runCommand } from '../src/cli/command.ts';
import { executeCommand } from '../src/cli/execute.ts';
import { programName } from '../src/core/command-hint.ts';

await main(() => runCommand(programName('execute', ownLayout()), executeCommand, process.argv.slice(2), processIo()));
