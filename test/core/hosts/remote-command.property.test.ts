// The remote command line: whatever the words hold (shell metacharacters, quotes, spaces,
// newlines, non-ASCII), a POSIX shell given the line hands the program exactly those words. The
// line is run through `sh -c` as ssh's remote side runs it, with `printf` standing in for the
// entry point, and what arrives is compared with what was sent.

import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { remoteCommandLine, shellLine, shellWord } from '../../../src/core/hosts/remote-command.ts';

/** What `sh -c line` hands its program, each argument ended by a NUL. */
const arrived = (line: string): string[] => {
  const out = execFileSync('sh', ['-c', line], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
};

const METACHARACTERS = [...'\'"`$\\;&|<>(){}[]*?!#~=% \t\n'];
/** Words made mostly of what a shell reads specially. */
const shellyWord = fc
  .array(fc.oneof(fc.constantFrom(...METACHARACTERS), fc.string({ minLength: 1, maxLength: 3, unit: 'grapheme' })), { maxLength: 12 })
  .map((parts) => parts.join(''));

describe('the remote command line', () => {
  it('hands the program every word exactly as given', () => {
    fc.assert(
      fc.property(fc.array(shellyWord, { minLength: 1, maxLength: 5 }), (words) => {
        expect(arrived(shellLine(['printf', '%s\\0', ...words]))).toEqual(words);
        // As the remote side's first word too: a program whose name holds anything runs as that name, never as shell syntax.
        expect(arrived(`exec ${shellLine(['printf', '%s\\0', ...words])}`)).toEqual(words);
      }),
      { numRuns: 60 },
    );
  });

  it('holds a work dir and an entry point with metacharacters as one argument each', () => {
    const workDir = '/srv/it\'s $(touch pwned) `id` ; rm -rf ~ && echo "x"\n';
    const line = remoteCommandLine({ node: 'printf', workDir }, '%s\\0');
    expect(arrived(line)).toEqual([workDir]);
  });

  it('leaves plain words bare, quotes the empty word and an assignment, and refuses a NUL, which no argument can hold', () => {
    expect(shellLine(['ssh', '-p', '2222', 'me@box'])).toBe('ssh -p 2222 me@box');
    expect(shellWord('')).toBe("''");
    expect(shellWord('A=b')).toBe("'A=b'");
    // Quoted, `A=b` is a program to run (none has that name: exit 127), never an assignment that would silently succeed.
    expect(() => execFileSync('sh', ['-c', `${shellLine(['A=b'])} 2>/dev/null`])).toThrow();
    expect(execFileSync('sh', ['-c', shellLine(['printf', '[%s]', ''])], { encoding: 'utf8' })).toBe('[]');
    expect(() => shellWord('a\0b')).toThrow(/NUL/);
  });
});
