// The command a host's channel runs there: a fixed sh script and its arguments, the same for
// every host and run. It finds foreman's remote program kept under the work dir by version
// (`<work dir>/.foreman/<version>/host.mjs`, the folder marked in use by the process,
// src/host/program-folders.ts) or, the first time, receives it on stdin (its size
// announced, nothing else sent until the program says it runs, so `head -c` cannot read past
// it), then runs it with the host's node through a small loader. With `keep: false` (a dry run)
// nothing is written: a program not there yet is read into memory and run from there.
//
// What the script prints before the program runs: `foreman-host send <bytes>` (send the
// program now) or `foreman-host no-node` (the node named is not there); exit 3 when it could
// not make its folder or keep the program, 4 when the program did not arrive whole.

/** The script, run as `sh -c SCRIPT foreman-host <work dir> <version> <bytes> <node> <keep|memory> <loader>`. */
export const BOOTSTRAP_SCRIPT = [
  'd=$1 v=$2 n=$3 node=$4 mode=$5 f=$1/.foreman/$2/host.mjs',
  'command -v "$node" >/dev/null 2>&1 || { echo "foreman-host no-node"; exit 5; }',
  // Its folder marked in use by this process (the program, exec'd, keeps the pid) before it looks for the program there.
  'if [ "$mode" = keep ]; then umask 077 && mkdir -p "$d/.foreman/$v/running" && chmod 700 "$d" "$d/.foreman" && : > "$d/.foreman/$v/running/$$" || exit 3; fi',
  'if [ ! -f "$f" ]; then',
  '  if [ "$mode" = memory ]; then echo "foreman-host send $n"; exec "$node" -e "$6" "$n" "$d" "$mode"; fi',
  '  echo "foreman-host send $n"',
  '  head -c "$n" > "$f.$$" || exit 3',
  '  [ "$(wc -c < "$f.$$")" -eq "$n" ] || { rm -f "$f.$$"; exit 4; }',
  '  mv "$f.$$" "$f" || exit 3',
  'fi',
  'exec "$node" -e "$6" "$n" "$d" "$mode" "$f"',
].join('\n');

/**
 * The loader node runs the program with: reads it from the kept file, or (a dry run) exactly its
 * bytes from stdin, no further (the rest is the channel's), and imports it from memory — a module
 * path holding a backslash or a percent sign would not load from the file — with the work dir
 * where the program reads it (`process.argv[2]`), and the mode (`process.argv[3]`: `memory` in a
 * dry run, whose program then writes nothing).
 */
export const LOADER = [
  "const fs = require('node:fs');",
  'const [size, , , file] = process.argv.slice(1);',
  'const bytes = file === undefined ? Buffer.alloc(Number(size)) : fs.readFileSync(file);',
  'for (let at = 0; file === undefined && at < bytes.length; ) {',
  '  let read = 0;',
  "  try { read = fs.readSync(0, bytes, at, bytes.length - at, null); } catch (e) { if (e.code === 'EAGAIN') continue; throw e; }",
  '  if (read === 0) process.exit(4);',
  '  at += read;',
  '}',
  "import('data:text/javascript;base64,' + bytes.toString('base64'));",
].join('\n');

/** What the bootstrap's first line says. */
export type BootstrapLine = { kind: 'send'; bytes: number } | { kind: 'no-node' } | null;

export function readBootstrapLine(line: string): BootstrapLine {
  const send = /^foreman-host send (\d+)$/.exec(line);
  if (send) return { kind: 'send', bytes: Number(send[1]) };
  return line === 'foreman-host no-node' ? { kind: 'no-node' } : null;
}

/** The program's run on the host: its argv (a transport quotes it for a shell where it must). */
export function remoteCommand(workDir: string, program: { version: string; bytes: number }, node: string, keep: boolean): string[] {
  return ['sh', '-c', BOOTSTRAP_SCRIPT, 'foreman-host', workDir, program.version, String(program.bytes), node, keep ? 'keep' : 'memory', LOADER];
}

/** What the bootstrap's own exit codes mean. */
export function bootstrapExit(code: number | null): string | null {
  switch (code) {
    case 3:
      return "could not make foreman's folder in the work dir or keep its program there";
    case 4:
      return "foreman's program did not arrive whole";
    default:
      return null;
  }
}
