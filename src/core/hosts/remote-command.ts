// The one command line foreman gives a remote shell. ssh joins the words after the destination
// into one string and the host's login shell parses it, so every word is quoted here for a POSIX
// shell: the line is a fixed entry point and the work dir, nothing else. Every task name, path,
// prompt and check travels as data on the entry point's stdin, never on this line.

/** Words a POSIX shell reads as themselves, left bare (no `=`: a first word `A=b` would be an assignment). */
const PLAIN = /^[A-Za-z0-9_@%+:,./-]+$/;

/**
 * One word for a POSIX shell: left bare when the shell reads it as itself, else in single quotes
 * with each `'` written as `'\''`; the shell hands the program exactly the characters given,
 * whatever they are (`$`, backquotes, `;`, spaces, newlines).
 */
export function shellWord(word: string): string {
  if (word.includes('\0')) throw new Error('a shell word cannot hold a NUL character');
  return PLAIN.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Words as one command line for a POSIX shell, each quoted (`ssh -p 2222 me@box`, for a message too). */
export const shellLine = (words: readonly string[]): string => words.map(shellWord).join(' ');

/**
 * The remote command line of a host: Node.js there (`node=` of its URL) running foreman's remote
 * entry point with the work dir as its one argument; `exec`, so that the program replaces the
 * shell and ssh's end of file reaches it.
 */
export const remoteCommandLine = (host: { node: string; workDir: string }, entryPoint: string): string =>
  `exec ${shellLine([host.node, entryPoint, host.workDir])}`;
