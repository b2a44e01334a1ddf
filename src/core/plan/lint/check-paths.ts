// The repository files an acceptance check names as files it needs before anything in it runs:
// the operand of a file test (`test -f dist/x.mjs`, `[ -s out.txt ]`), the files a reader is
// given (`cat`, `diff`, `grep -q x src/a.ts`, `< input`), a script an interpreter runs
// (`node scripts/check.mjs`), the test files of `node --test` and a command run by its path
// (`./bin/tool`). The plan lint warns
// of one that no task creates and the last commit lacks: the check would fail whatever the
// worker does. Conservative, so it does not cry wolf: a command holding shell code it cannot
// follow (substitutions, conditionals, loops, here-documents) names nothing; reading stops at the
// first command that may make files (anything but a file test or a reader); a test negated or
// whose failure is tolerated (`!`, `||`, `-o`) names nothing; only literal words that look like
// repository paths count. Pure.

import { pathProblem } from '../paths.ts';

/** A path a check needs, and whether it named it as a directory (`test -d`). */
export interface CheckPath {
  path: string;
  directory: boolean;
}

interface Word {
  text: string;
  /** Holds an expansion (`$x`, a glob): not a literal name. */
  expands: boolean;
}

type Token = { kind: 'word'; word: Word } | { kind: 'operator'; text: string };

/** Shell words that start a construct whose flow this reading does not follow. */
const CONTROL_WORDS = new Set([
  'if',
  'then',
  'elif',
  'else',
  'fi',
  'while',
  'until',
  'for',
  'do',
  'done',
  'case',
  'esac',
  'select',
  'function',
  '{',
  '}',
  'time',
  'coproc',
]);

/** Unary file tests of `test` and `[`, and whether each asks for a directory. */
const FILE_TESTS = new Map<string, boolean>([...['-e', '-f', '-s', '-r', '-w', '-x', '-L', '-h'].map((op): [string, boolean] => [op, false]), ['-d', true]]);

/** Commands that only read the files they are given (every operand that looks like a path). */
const READERS = new Set(['cat', 'head', 'tail', 'wc', 'diff', 'cmp', 'stat', 'file', 'ls', 'md5sum', 'sha1sum', 'sha256sum', 'sha512sum']);
const GREPS = new Set(['grep', 'egrep', 'fgrep']);
/** Interpreters whose first operand is the script they run, and the options that run code given inline instead. */
const INTERPRETERS = new Map<string, readonly string[]>([
  ['node', ['-e', '--eval', '-p', '--print', '-r', '--require', '--import']],
  ['python', ['-c', '-m']],
  ['python3', ['-c', '-m']],
  ['sh', ['-c']],
  ['bash', ['-c']],
  ['ruby', ['-e']],
  ['perl', ['-e', '-E']],
]);

/** The shell's words and operators, quotes removed; null for shell code this reading does not follow. */
function tokenize(command: string): Token[] | null {
  if (/`|\$\(|<<|<\(|>\(/.test(command)) return null;
  const tokens: Token[] = [];
  let text = '';
  let expands = false;
  let inWord = false;
  const endWord = () => {
    if (inWord) tokens.push({ kind: 'word', word: { text, expands } });
    text = '';
    expands = false;
    inWord = false;
  };
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (c === "'" || c === '"') {
      const end = command.indexOf(c, i + 1);
      if (end < 0) return null;
      const quoted = command.slice(i + 1, end);
      // A quoted glob is no file either: the command may expand it (`node --test "test/**"`).
      if ((c === '"' && /[$\\]/.test(quoted)) || /[*?[\]{}]/.test(quoted)) expands = true;
      text += quoted;
      inWord = true;
      i = end;
    } else if (c === '\\') {
      // An escaped character is literal, but an escape is rare enough in a path to give up on the word.
      expands = true;
      text += command[i + 1] ?? '';
      inWord = true;
      i++;
    } else if (/\s/.test(c) && c !== '\n') {
      endWord();
    } else if ('|&;()<>\n'.includes(c)) {
      // A redirection's file descriptor (`2>`) belongs to the operator.
      const descriptor = (c === '>' || c === '<') && inWord && /^\d+$/.test(text) && !expands ? text : '';
      if (descriptor !== '') {
        text = '';
        inWord = false;
      }
      endWord();
      const two = command.slice(i, i + 2);
      const operator = ['&&', '||', '>>', '>&', '&>', ';;'].includes(two) ? two : c;
      i += operator.length - 1;
      tokens.push({ kind: 'operator', text: descriptor + operator });
    } else {
      if ('$*?[]{}~'.includes(c)) expands = true;
      text += c;
      inWord = true;
    }
  }
  endWord();
  return tokens;
}

/** A literal word as a repository path, or null: `./a.ts` → `a.ts`; absolute, `..`, `.git/` paths and options are none. */
function repositoryPath(word: Word, loose: boolean): string | null {
  if (word.expands) return null;
  const path = word.text.replace(/^(?:\.\/)+/, '');
  if (path === '' || path.startsWith('-') || path.includes('=') || path.includes(':') || path.includes('@')) return null;
  // Outside a file test, only a word with a folder or an extension is taken for a file: `head -n 5` has no file 5.
  if (!loose && !(path.includes('/') || /[^.]\.[A-Za-z0-9]{1,10}$/.test(path))) return null;
  return pathProblem(path) === null ? path : null;
}

/** The words that are repository paths, as files. */
function pathsOf(words: readonly Word[], loose: boolean): CheckPath[] {
  return words.flatMap((word) => {
    const path = repositoryPath(word, loose);
    return path === null ? [] : [{ path, directory: false }];
  });
}

/** Paths a `test` / `[` / `[[` expression needs: none when it negates or tolerates their absence. */
function testedPaths(words: readonly Word[]): CheckPath[] {
  const texts = words.map((w) => w.text);
  if (texts.some((t) => t === '!' || t === '-o' || t === '||')) return [];
  const found: CheckPath[] = [];
  words.forEach((word, k) => {
    const directory = FILE_TESTS.get(texts[k - 1] ?? '');
    if (directory === undefined) return;
    const path = repositoryPath(word, true);
    if (path !== null) found.push({ path: path.replace(/\/$/, ''), directory });
  });
  return found;
}

/** What one simple command needs, and whether the commands after it may rely on what it made. */
function commandPaths(words: readonly Word[]): { paths: CheckPath[]; makesFiles: boolean } {
  const name = words[0]!.text;
  const operands = words.slice(1);
  const options = operands.filter((w) => w.text.startsWith('-')).map((w) => w.text);
  const plain = operands.filter((w) => !w.text.startsWith('-'));
  const files = (list: readonly Word[]) => pathsOf(list, false);
  if (name === 'test' || name === '[' || name === '[[') {
    // A test makes nothing: what follows it is still read.
    return { paths: testedPaths(operands.filter((w) => w.text !== ']' && w.text !== ']]')), makesFiles: false };
  }
  if (READERS.has(name)) return { paths: files(plain), makesFiles: false };
  if (GREPS.has(name)) {
    // The first operand is the pattern, unless an option gives it (then every operand could be a file; too loose to say).
    if (options.some((o) => /^-[a-zA-Z]*[ef]/.test(o) || o === '--regexp' || o === '--file')) return { paths: [], makesFiles: false };
    // An option's value (`-A 3`, `-m 1`) is no operand.
    const operandsOnly = operands.filter((w, k) => !w.text.startsWith('-') && !/^-[a-zA-Z]*[ABCmdD]$/.test(operands[k - 1]?.text ?? ''));
    return { paths: files(operandsOnly.slice(1)), makesFiles: false };
  }
  const inline = INTERPRETERS.get(name);
  if (inline !== undefined) {
    if (options.some((o) => inline.includes(o) || o.startsWith('--eval'))) return { paths: [], makesFiles: true };
    // `node --test a.test.mjs b.test.mjs`: the test files, but an option's value (`--test-name-pattern x`).
    if (name === 'node' && options.includes('--test')) {
      const tests = operands.filter((w, k) => !w.text.startsWith('-') && !/^--test-[\w-]+$/.test(operands[k - 1]?.text ?? ''));
      return { paths: files(tests), makesFiles: true };
    }
    const script = operands.findIndex((w) => !w.text.startsWith('-'));
    // Only when no option came before it: an option's value (`node --loader x a.mjs`) is not the script.
    return { paths: script === 0 ? files(operands.slice(0, 1)) : [], makesFiles: true };
  }
  // A command run by its path needs that file; what it does after is unknown.
  if (name.includes('/')) return { paths: files(words.slice(0, 1)), makesFiles: true };
  return { paths: [], makesFiles: true };
}

/**
 * The repository paths `check` needs to exist before anything in it could make them: each named
 * once, in order. Empty when it names none, or when it is shell code this reading does not follow.
 */
export function checkPaths(check: string): CheckPath[] {
  const tokens = tokenize(check);
  if (tokens === null) return [];
  // Simple commands with the operators around them; a redirection's target travels with its command.
  const commands: Array<{ words: Word[]; inputs: Word[]; before: string; after: string }> = [];
  let current: { words: Word[]; inputs: Word[]; before: string; after: string } = { words: [], inputs: [], before: '', after: '' };
  let redirect: string | null = null;
  for (const token of tokens) {
    if (token.kind === 'word') {
      if (redirect !== null) {
        if (redirect.endsWith('<')) current.inputs.push(token.word);
        redirect = null;
      } else {
        current.words.push(token.word);
      }
      continue;
    }
    if (/^\d*(?:<|>|>>|>&)$|^&>$/.test(token.text)) {
      redirect = token.text;
      continue;
    }
    if (token.text === '(' || token.text === ')' || token.text === ';;') return [];
    current.after = token.text;
    commands.push(current);
    current = { words: [], inputs: [], before: token.text, after: '' };
  }
  commands.push(current);

  const found = new Map<string, CheckPath>();
  for (const command of commands) {
    // Leading assignments (`CI=1 cat x`) set the environment; the command is the word after them.
    const start = command.words.findIndex((w) => !/^[A-Za-z_]\w*=/.test(w.text));
    const negated = command.words[start]?.text === '!';
    const words = start < 0 ? [] : command.words.slice(negated ? start + 1 : start);
    if (words[0] !== undefined && CONTROL_WORDS.has(words[0].text)) return [...found.values()];
    // A failure tolerated (`a || b`), negated (`! test -f x`) or sent to the background proves nothing missing.
    const tolerated = negated || command.before === '||' || command.after === '||' || command.after === '&';
    const needs = words.length === 0 ? { paths: [], makesFiles: false } : commandPaths(words);
    if (!tolerated) {
      for (const need of [...pathsOf(command.inputs, true), ...needs.paths]) if (!found.has(need.path)) found.set(need.path, need);
    }
    if (needs.makesFiles) break;
  }
  return [...found.values()];
}
