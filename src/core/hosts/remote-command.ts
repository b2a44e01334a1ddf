// The one command line foreman gives a remote shell. ssh joins the words after the destination
// into one string and the host's login shell parses it, so every word is quoted here for a POSIX
// shell: the line is a fixed entry point and the work dir, nothing else. Every task name, path,
// prompt and check travels as data on the entry point's stdin, never on this line.

/**
 * One word for a POSIX shell: in single quotes, each `'` written as `'\''`; the shell hands the
 * program exactly the characters given, whatever they are (`$`, backquotes, `;`, spaces, newlines).
 */
export function shellWord(word: string): string {
  if (word.includes('\0')) throw new Error('a shell word cannot hold a NUL character');
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Words as one command line for a POSIX shell, each quoted: `exec` so the program replaces the shell, and ssh's end of file reaches it. */
export const shellLine = (words: readonly string[]): string => `exec ${words.map(shellWord).join(' ')}`;

/**
 * The remote command line of a host: Node.js there (`node=` of its URL) running foreman's remote
 * entry point with the work dir as its one argument.
 */
export const remoteCommandLine = (host: { node: string; workDir: string }, entryPoint: string): string => shellLine([host.node, entryPoint, host.workDir]);
