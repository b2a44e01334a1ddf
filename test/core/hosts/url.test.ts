// Host URLs: what each part means, the defaults, and a one-line error naming each problem.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SLOTS, hostsFileSources, parseHost, parseHosts, runConcurrency } from '../../../src/core/hosts/url.ts';

const host = (text: string) => parseHost({ text, origin: '--host' });
const problem = (text: string): string => {
  const parsed = host(text);
  if (parsed.ok) throw new Error(`${text} parsed`);
  return parsed.error;
};

describe('a host URL', () => {
  it('reads every part of an ssh URL, with the defaults of what it leaves out', () => {
    expect(host('ssh://build@builder.example:2222/srv/foreman?slots=3&include=1&claude=/opt/claude/bin/claude')).toEqual({
      ok: true,
      value: {
        kind: 'ssh',
        name: 'build@builder.example:2222',
        url: 'ssh://build@builder.example:2222/srv/foreman?slots=3&include=1&claude=/opt/claude/bin/claude',
        user: 'build',
        host: 'builder.example',
        port: 2222,
        workDir: '/srv/foreman',
        slots: 3,
        claude: '/opt/claude/bin/claude',
        node: 'node',
        git: 'git',
        include: true,
        freeMb: 1024,
      },
    });
    const alias = host('ssh://gpu1/home/me/foreman%20work/?name=gpu&node=node22&free-mb=0');
    expect(alias.ok && alias.value).toMatchObject({
      name: 'gpu',
      host: 'gpu1',
      workDir: '/home/me/foreman work',
      slots: DEFAULT_SLOTS,
      include: false,
      node: 'node22',
      freeMb: 0,
    });
    // No user or port: ssh's own configuration decides.
    expect(alias.ok && alias.value).not.toHaveProperty('user');
    expect(alias.ok && alias.value).not.toHaveProperty('port');
    const v6 = host('ssh://[::1]:22/w');
    expect(v6.ok && v6.value).toMatchObject({ host: '::1', port: 22, name: '[::1]:22' });
  });

  it('reads local, with its slots only', () => {
    expect(host('local?slots=2')).toEqual({ ok: true, value: { kind: 'local', name: 'local', url: 'local?slots=2', slots: 2 } });
    expect(host('local')).toMatchObject({ ok: true, value: { slots: DEFAULT_SLOTS } });
    expect(problem('local?include=1')).toBe('--host "local?include=1": include is a parameter of an ssh host; local takes slots only');
  });

  it('names each problem in one line', () => {
    const cases: Array<[string, string]> = [
      ['ssh://h/w?slot=2', 'unknown parameter "slot": did you mean slots?'],
      ['ssh://h/w?slots=0', 'slots expects a whole number from 1 to 64, got "0"'],
      ['ssh://h/w?slots=2&slots=3', 'slots is given twice'],
      ['ssh://h/w?slots=', 'slots has no value'],
      ['ssh://h/w?include=yes', 'include expects 0 or 1, got "yes"'],
      ['ssh://h', 'no work dir'],
      ['ssh://h/', 'no work dir'],
      ['ssh://h/srv/../etc', 'must be a plain absolute path'],
      ['ssh://h:99999/w', 'the port expects a whole number from 1 to 65535, got "99999"'],
      ['ssh://me:secret@h/w', 'a password is never taken in a URL'],
      ['ssh://-oProxyCommand=x/w', 'is not a host name'],
      ['ssh://-l@h/w', 'is not a login name'],
      ['ssh:///w', 'no host'],
      ['ssh://h/w#x', 'no #fragment'],
      ['ssh://h/w?claude=bin/claude', "claude expects a program's name (on the host's PATH) or an absolute path"],
      ['ssh://h/w?node=-e', 'would be read as an option'],
      ['ssh://h/w?name=local', "is not a host's name"],
      ['ssh://h/w%zz', 'is not percent-encoded right'],
      ['ssh://h/w%0a', 'holds a control character'],
      ['ssh://h/w\u001b[2J', 'holds a control character'],
      ['https://h/w', 'foreman reaches hosts by ssh only'],
      ['builder', 'expected ssh://[user@]host[:port]/work/dir?slots=N, or local?slots=N'],
    ];
    for (const [text, words] of cases) {
      const error = problem(text);
      expect(error.startsWith(`--host "${text.replace('\u001b', '\\u001b')}": `), error).toBe(true);
      expect(error).toContain(words);
      expect(error).not.toContain('\n');
    }
  });
});

describe('the hosts of a run', () => {
  const sources = (...texts: string[]) => texts.map((text, i) => ({ text, origin: `hosts:${i + 1}` }));

  it('keeps them in order, and refuses two of the same', () => {
    const hosts = parseHosts(sources('local?slots=1', 'ssh://a/w', 'ssh://b/w'));
    expect(hosts.ok && hosts.value.map((h) => h.name)).toEqual(['local', 'a', 'b']);
    // Same name: the second is refused until the URL tells them apart.
    expect(parseHosts(sources('ssh://a/w', 'ssh://a/w2'))).toEqual({
      ok: false,
      error: 'hosts:2 "ssh://a/w2": another host is already called a (ssh://a/w); tell them apart with name=…',
    });
    expect(parseHosts(sources('ssh://a/w', 'ssh://a/w2?name=a2')).ok).toBe(true);
    expect(parseHosts(sources('ssh://a/w', 'ssh://a/w/?name=b'))).toMatchObject({
      ok: false,
      error: expect.stringContaining('the same work dir on the same host as ssh://a/w'),
    });
    expect(parseHosts(sources('local', 'local?slots=2'))).toMatchObject({ ok: false, error: expect.stringContaining('local is named twice') });
  });

  it('reads a hosts file: one URL a line, # comments, blank lines', () => {
    const text = '# the build farm\nssh://a/w?slots=2   # the big one\n\n  local?slots=1\n';
    expect(hostsFileSources(text, 'hosts.txt')).toEqual({
      ok: true,
      value: [
        { text: 'ssh://a/w?slots=2', origin: 'hosts.txt:2' },
        { text: 'local?slots=1', origin: 'hosts.txt:4' },
      ],
    });
    expect(hostsFileSources('# none\n', 'hosts.txt')).toMatchObject({ ok: false, error: expect.stringContaining('hosts.txt names no host') });
    expect(hostsFileSources('ssh://a/w local\n', 'hosts.txt')).toEqual({ ok: false, error: 'hosts.txt:1: one URL a line, got "ssh://a/w local"' });
  });

  it('takes its concurrency from the slots, capped by --concurrency, never above them', () => {
    const hosts = parseHosts(sources('local?slots=1', 'ssh://a/w?slots=3'));
    if (!hosts.ok) throw new Error(hosts.error);
    expect(runConcurrency(undefined, hosts.value)).toEqual({ ok: true, value: 4 });
    expect(runConcurrency(2, hosts.value)).toEqual({ ok: true, value: 2 });
    expect(runConcurrency(5, hosts.value)).toMatchObject({
      ok: false,
      error: expect.stringContaining("--concurrency 5 is more than the hosts' 4 slots together"),
    });
  });
});

describe('any host URL', () => {
  const word = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,8}$/);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what a work dir may not hold
  const control = /[\u0000-\u001f\u007f-\u009f]/;
  const segment = fc.string({ minLength: 1, maxLength: 6, unit: 'grapheme' }).filter((s) => s !== '.' && s !== '..' && !s.includes('/') && !control.test(s));

  it('reads back what it was made of: user, host, port, a work dir of any characters (percent-encoded), slots', () => {
    fc.assert(
      fc.property(
        fc.option(word, { nil: undefined }),
        word,
        fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
        fc.array(segment, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 64 }),
        (user, name, port, segments, slots) => {
          const url = `ssh://${user === undefined ? '' : `${user}@`}${name}${port === undefined ? '' : `:${port}`}/${segments.map(encodeURIComponent).join('/')}?slots=${slots}`;
          const parsed = host(url);
          expect(parsed.ok, url).toBe(true);
          if (!parsed.ok || parsed.value.kind !== 'ssh') return;
          expect(parsed.value).toMatchObject({ host: name, workDir: `/${segments.join('/')}`, slots });
          expect(parsed.value.user).toBe(user);
          expect(parsed.value.port).toBe(port);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws on any text: a host, or one line naming where it came from', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `ssh://${s}`),
          fc.string().map((s) => `local?${s}`),
        ),
        (text) => {
          const parsed = host(text);
          // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
          if (!parsed.ok) expect(parsed.error).toMatch(/^--host "[^\u0000-\u001f\u007f-\u009f]*": [^\u0000-\u001f\u007f-\u009f]+$/);
        },
      ),
      { numRuns: 500 },
    );
  });
});
