// The remote side's entry point, bundled alone into host.mjs (src/adapters/host/program.ts):
// run by the bootstrap's loader (src/adapters/host/bootstrap.ts) as `node -e LOADER <size> <work
// dir> <keep|memory> [<kept file>]`. Everything it makes is private to the host's user. Run from
// its kept file as `node <kept file> sandbox-host <network>`, it is a sandbox host for the
// sandboxed commands it runs (./sandboxed.ts): scripts/sandbox-host.mjs, bundled in under the
// name the bundle's options give it (src/adapters/host/program.ts).

import { main } from './main.ts';
import { SANDBOX_HOST_ARGUMENT } from './sandboxed.ts';

process.umask(0o077);
const workDir = process.argv[2];
if (workDir === SANDBOX_HOST_ARGUMENT) {
  await import('@foreman/sandbox-host');
} else if (workDir === undefined || !workDir.startsWith('/')) {
  process.stderr.write('foreman host: run by foreman with the absolute work dir as its argument\n');
  process.exit(2);
} else {
  // A dry run's program writes nothing on the host; a kept one knows its file (`<work dir>/.foreman/<version>/host.mjs`).
  void main(workDir, process.argv[3] === 'memory', process.argv[4]);
}
