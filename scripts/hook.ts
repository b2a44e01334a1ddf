#!/usr/bin/env -S npx tsx
// The plugin's PreToolUse hook for in-session workers (src/cli/hook.ts): a tool call in on stdin,
// the decision out. Claude Code runs the bundle, plugin/dist/hook.mjs, through hooks/pre-tool-use.
import { runHook } from '../src/cli/hook.ts';

await runHook();
