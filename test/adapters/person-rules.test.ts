// The person's rules as the worker hook reads them (src/adapters/sandbox/person-rules.ts): the words of a
// `claude` command line's `--disallowedTools`, split as Claude Code 2.1.330 splits them
// (test/support/CLI-NOTES.md), and a word that does not split cleanly counted as rules nobody
// could read (a deny rule for every Bash command).

import { describe, expect, it } from 'vitest';
import { commandLineRules, disallowedWords } from '../../src/adapters/sandbox/person-rules.ts';

describe('--disallowedTools', () => {
  it('keeps a rule whose path holds parentheses whole', async () => {
    expect(await commandLineRules(['claude', '--disallowedTools', 'Read(./foo(1).txt)'], '/p')).toEqual({ deny: ['Read(./foo(1).txt)'], ask: [] });
    expect(await commandLineRules(['claude', '--disallowedTools=Read(./x(1).txt),Read(./y.txt) WebFetch'], '/p')).toEqual({
      deny: ['Read(./x(1).txt)', 'Read(./y.txt)', 'WebFetch'],
      ask: [],
    });
    expect(await commandLineRules(['claude', '--disallowedTools', 'Bash(git push:*)', 'Edit', '--model', 'x'], '/p')).toEqual({
      deny: ['Bash(git push:*)', 'Edit'],
      ask: [],
    });
  });

  it('takes both of the CLI’s readings where they differ: `Read(./a(1) b.txt)` denies `./a(1` too', () => {
    expect(disallowedWords('Read(./a(1) b.txt)')).toEqual({ rules: ['Read(./a(1)', 'b.txt)', 'Read(./a(1) b.txt)'], clean: true });
    expect(disallowedWords('Bash(echo \\() , Read')).toEqual({ rules: ['Bash(echo \\()', 'Read'], clean: true });
  });

  it('counts a word that is not rules cleanly as rules nobody could read: every Bash command denied', async () => {
    for (const word of ['Read(./foo(1).txt', 'Read(./a))', 'Read(./a)b', ')', 'Read(a) (b)']) {
      expect(disallowedWords(word).clean, word).toBe(false);
      const rules = await commandLineRules(['claude', '--disallowedTools', word], '/p');
      expect(rules.deny, word).toContain('Bash');
      expect(rules.unread, word).toEqual([`--disallowedTools ${word}`]);
    }
  });
});
