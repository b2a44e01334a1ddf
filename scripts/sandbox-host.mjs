#!/usr/bin/env node
// A sandbox host: the sandbox runtime (`@anthropic-ai/sandbox-runtime`) loaded and initialized
// once, wrapping one command after another for the foreman process that started it
// (src/adapters/sandbox/sandbox-host.ts), which runs each wrapped command itself. Starting the runtime's
// CLI for every command cost a node start, the runtime's import and its initialization (its
// network proxy and bridges) each time.
//
// Plain JavaScript, so a checkout runs it with node as it is; the plugin's build bundles it.
//
// The last argument: the runtime's network settings for every command it wraps (JSON:
// allowedDomains, empty for none but the command's own loopback, and deniedDomains); the runtime
// keeps one per process. (Last, since foreman's remote program on an SSH host runs this script
// bundled into itself, after an argument of its own: src/host/entry.ts.)
// stdin, one JSON request a line, answered in order on stdout, one JSON line each:
//   {"id": n, "wrap": COMMAND, "cwd": DIR, "filesystem": SETTINGS, "tmp": DIR}
//       → {"id": n, "wrapped": SHELL-COMMAND} or {"id": n, "error": TEXT}
//     the command, to run with `/bin/sh -c` in `cwd`, writes only where the runtime's filesystem
//     settings allow, with `tmp` as its TMPDIR. The runtime reads both from this process when it
//     wraps: the files it guards (.bashrc, .git/hooks, .claude/…) are those of its working
//     directory, and its TMPDIR is CLAUDE_CODE_TMPDIR; which is why the host moves to `cwd` and
//     wraps one command at a time;
//   {"id": n, "ended": true} → {"id": n}
//     the wrapped command ended: the runtime removes the placeholder files its bubblewrap made.
// The first line is {"ready": true} once the runtime is initialized, or {"error": TEXT}.
// End of stdin (the foreman process ended, however it ended): the runtime stops its proxy and
// bridges, and the host exits.

import { createInterface } from 'node:readline';
import { SandboxManager } from '@anthropic-ai/sandbox-runtime';

const say = (answer) => process.stdout.write(`${JSON.stringify(answer)}\n`);
const message = (e) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

async function main() {
  try {
    const network = JSON.parse(process.argv.at(-1) ?? '');
    await SandboxManager.initialize({ network, filesystem: { allowWrite: [], denyWrite: [], denyRead: [] } });
  } catch (e) {
    say({ error: message(e) });
    return;
  }
  say({ ready: true });
  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    queue = queue.then(() => answer(line));
  });
  await new Promise((resolve) => lines.once('close', resolve));
  await queue;
}

async function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    say({ error: `not a request: ${line.slice(0, 80)}` });
    return;
  }
  const { id } = request;
  if (request.ended === true) {
    SandboxManager.cleanupAfterCommand();
    say({ id });
    return;
  }
  try {
    process.chdir(request.cwd);
    process.env.CLAUDE_CODE_TMPDIR = request.tmp;
    const wrapped = await SandboxManager.wrapWithSandbox(request.wrap, undefined, { filesystem: request.filesystem });
    say({ id, wrapped });
  } catch (e) {
    say({ id, error: message(e) });
  }
}

await main();
await SandboxManager.reset().catch(() => undefined);
process.exit(0);
