// The remote side's entry point, bundled alone into host.mjs (src/adapters/host/program.ts):
// `node host.mjs <work dir>`, or the bootstrap's loader with the same arguments after the
// program's size. Everything it makes is private to the host's user.

import { main } from './main.ts';

process.umask(0o077);
const workDir = process.argv[2];
if (workDir === undefined || !workDir.startsWith('/')) {
  process.stderr.write('foreman host: run by foreman with the absolute work dir as its argument\n');
  process.exit(2);
}
void main(workDir);
