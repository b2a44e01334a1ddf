// One word for a POSIX shell on the host (the remote command line ssh hands to the user's shell):
// single-quoted, a quote inside written as '\''. Kept in this one place so the hosts' tested
// quoting (src/core/hosts/) can replace it.

/** `word` as one shell word, whatever it holds. */
export const shellWord = (word: string): string => (/^[A-Za-z0-9_@%+:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`);

/** A command line of `words`, each quoted. */
export const shellLine = (words: readonly string[]): string => words.map(shellWord).join(' ');
