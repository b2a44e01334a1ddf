import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Plan, Task } from '../../src/core/plan/plan.ts';
import { dependencyResults, parseStatusLine, workerPrompt } from '../../src/core/attempt/prompt.ts';

const files = (create: string[] = [], modify: string[] = []) => ({ files: { create, modify } });

function plan(tasks: Task[]): Plan {
  return { schemaVersion: 3, goal: 'g', tasks };
}

const base = (): Plan =>
  plan([
    { subject: 'Config', status: 'completed', result: 'added rateLimit to the schema', blockedBy: [], metadata: files([], ['src/config.ts']) },
    { subject: 'Bucket', status: 'completed', blockedBy: [], metadata: files(['src/bucket.ts']) },
    { subject: 'Survey', status: 'failed', result: 'gave up', prompt: 'x', blockedBy: [], metadata: files() },
    { subject: 'Wire it', prompt: 'Wire the limiter into src/server.ts.', blockedBy: [0, 1, 2], metadata: files(['src/hook.ts'], ['src/server.ts']) },
  ]);

const opts = { maxAttempts: 3 };

describe('workerPrompt', () => {
  it('appends the completed blockers’ results when the prompt has no placeholder', () => {
    const text = workerPrompt(base(), 3, opts);
    expect(text.startsWith('Wire the limiter into src/server.ts.\n\n## Dependency results\n')).toBe(true);
    expect(text).toContain('- Task 0 (Config): added rateLimit to the schema');
    expect(text).toContain('- Task 1 (Bucket): completed');
    // Only completed blockers contribute.
    expect(text).not.toContain('Task 2 (Survey)');
    expect(text).not.toContain('gave up');
  });

  it('puts the results in place of a placeholder line, and only there', () => {
    const p = base();
    p.tasks[3]!.prompt = 'Step one.\n[Dependency results will appear here]\nStep two.';
    const text = workerPrompt(p, 3, opts);
    expect(text).not.toContain('[Dependency results will appear here]');
    expect(text.startsWith('Step one.\n## Dependency results\n')).toBe(true);
    expect(text).toMatch(/- Task 1 \(Bucket\): completed\nStep two\.\n\n## Rules for this run/);
    expect(text.match(/## Dependency results/g)).toHaveLength(1);
  });

  it.each([
    'Dependency results go here',
    '<!-- dependency results: placeholder -->',
    '(dependency results are appended by the orchestrator)',
    '[DEPENDENCY RESULTS DEFERRED]',
  ])('recognises the placeholder %j', (line) => {
    const p = base();
    p.tasks[3]!.prompt = `Intro.\n${line}\nOutro.`;
    const text = workerPrompt(p, 3, opts);
    expect(text).not.toContain(line);
    expect(text.startsWith('Intro.\n## Dependency results')).toBe(true);
  });

  it('inserts dependency results verbatim, even with $ patterns', () => {
    const p = base();
    p.tasks[0]!.result = "costs $& and $1 and $'";
    p.tasks[3]!.prompt = 'A\ndependency results go here\nB';
    expect(workerPrompt(p, 3, opts)).toContain("- Task 0 (Config): costs $& and $1 and $'");
  });

  it('leaves a placeholder alone when no blocker has completed', () => {
    const p = base();
    p.tasks[3]!.blockedBy = [2];
    expect(dependencyResults(p, 3)).toBeNull();
    const text = workerPrompt(p, 3, opts);
    expect(text).not.toContain('## Dependency results');
  });

  it('ends with the rules footer naming the task’s files and the status-line contract', () => {
    const text = workerPrompt(base(), 3, opts);
    const footer = text.slice(text.indexOf('## Rules for this run'));
    expect(footer).toContain('create src/hook.ts; modify src/server.ts.');
    expect(footer).toContain('Do not stage, commit, stash, reset or check out anything with git');
    // The status line as plain text: the prompt shows no line a worker would copy in backticks.
    expect(footer).toContain(
      'End your reply with exactly one final status line, as plain text (no bold, no backticks), and nothing after it: the word COMPLETED, FAILED or BLOCKED, a colon',
    );
    expect(footer).not.toMatch(/`(COMPLETED|FAILED): /);
    // What to do when the task needs a file it does not declare.
    expect(footer).toContain('end with `BLOCKED: needs to change <path>, which the task does not declare`');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.endsWith('\n\n')).toBe(false);
    const none = workerPrompt(plan([{ subject: 's', prompt: 'p', blockedBy: [], metadata: files() }]), 0, opts);
    expect(none).toContain('create (none); modify (none).');
  });

  it('the prompt itself never parses as a status line', () => {
    expect(parseStatusLine(workerPrompt(base(), 3, opts))).toBeNull();
  });

  it('no retry block on the first attempt', () => {
    expect(workerPrompt(base(), 3, opts)).not.toContain('## Retry');
  });

  it('a retry says which attempt this is, why the last one failed, the fallback and the checks', () => {
    const p = base();
    Object.assign(p.tasks[3]!, {
      attempts: 1,
      result: 'acceptance check failed (tests pass): `npm test` exited 1',
      agent: {
        fallback: 'register the hook in src/hook.ts instead',
        acceptanceCriteria: [{ criterion: 'tests pass', check: 'npm test' }],
      },
    });
    const text = workerPrompt(p, 3, opts);
    const retry = text.slice(text.indexOf('## Retry'), text.indexOf('## Rules for this run'));
    expect(retry).toContain('This is attempt 2 of 3. The previous attempt did not pass:');
    expect(retry).toContain('acceptance check failed (tests pass): `npm test` exited 1');
    expect(retry).toContain('IMPORTANT: the primary approach failed; use this strategy instead: register the hook in src/hook.ts instead');
    expect(retry).toContain('- tests pass: `npm test`');
    // Order: body, dependency results, retry, rules.
    expect(text.indexOf('## Dependency results')).toBeLessThan(text.indexOf('## Retry'));
    expect(text.indexOf('## Retry')).toBeLessThan(text.indexOf('## Rules for this run'));
  });

  it('a retry lists the files the task may change, a denied write in the reason, and says every other write is denied', () => {
    const p = base();
    Object.assign(p.tasks[3]!, {
      attempts: 1,
      result: 'the worker said FAILED: could not write (permission denied for: Write(/repo/src/other.ts))',
      metadata: files(['src/hook.ts', 'src/hooks/'], ['src/server.ts']),
    });
    const text = workerPrompt(p, 3, opts);
    const retry = text.slice(text.indexOf('## Retry'), text.indexOf('## Rules for this run'));
    expect(retry).toContain('permission denied for: Write(/repo/src/other.ts)');
    expect(retry).toContain(
      'You may change only these files (a path ending in "/" covers everything under it): src/hook.ts, src/hooks/, src/server.ts. Every other write is denied.',
    );
    // The first attempt's prompt names them too, in its rules.
    p.tasks[3]!.attempts = 0;
    const first = workerPrompt(p, 3, opts);
    expect(first).not.toContain('## Retry');
    expect(first).toContain(
      'create src/hook.ts, src/hooks/; modify src/server.ts. Writes to any other path are denied, and a change to one is set aside and never kept.',
    );
  });

  it('a retry says what to do about what failed (task.retryAdvice), and paths a task may change but need not are named', () => {
    const p = base();
    Object.assign(p.tasks[3]!, {
      attempts: 1,
      result: 'acceptance check failed (tests pass): `npm test` exited 1; changed files its task does not declare: src/index.ts (set aside, not integrated)',
      retryAdvice: 'The previous attempt changed or tried to change src/index.ts, which this task does not declare: such changes are set aside and never kept.',
      metadata: { files: { create: ['src/hook.ts'], modify: ['src/server.ts'], mayChange: ['package-lock.json'] } },
    });
    const text = workerPrompt(p, 3, opts);
    const retry = text.slice(text.indexOf('## Retry'), text.indexOf('## Rules for this run'));
    expect(retry).toContain('acceptance check failed (tests pass)');
    expect(retry).toContain('The previous attempt changed or tried to change src/index.ts');
    expect(retry).toContain('src/hook.ts, src/server.ts, package-lock.json. Every other write is denied.');
    expect(text).toContain('These may change too, when a tool you run rewrites them (an install, a test run, a build): package-lock.json.');
    expect(parseStatusLine(text)).toBeNull();
  });

  it('a retry of a task with no declared files says it may change none', () => {
    const p = plan([{ subject: 'Survey', prompt: 'Look around.', attempts: 1, result: 'no', blockedBy: [], metadata: files() }]);
    expect(workerPrompt(p, 0, opts)).toContain('You may change only these files (a path ending in "/" covers everything under it): (none).');
  });

  it('a retry without a fallback or a recorded reason says so plainly', () => {
    const p = base();
    p.tasks[3]!.attempts = 2;
    const text = workerPrompt(p, 3, { maxAttempts: 5 });
    expect(text).toContain('This is attempt 3 of 5.');
    expect(text).toContain('(no reason was recorded)');
    expect(text).not.toContain('IMPORTANT');
    expect(text).not.toContain('acceptance checks must pass');
  });

  it('falls back to the description, then the subject, when there is no prompt', () => {
    const p = plan([{ subject: 'The subject', description: 'The description', blockedBy: [], metadata: files(), status: 'completed' }]);
    expect(workerPrompt(p, 0, opts).startsWith('The description\n\n')).toBe(true);
    delete p.tasks[0]!.description;
    expect(workerPrompt(p, 0, opts).startsWith('The subject\n\n')).toBe(true);
  });

  it('is deterministic: the same plan gives the same prompt', () => {
    expect(workerPrompt(base(), 3, opts)).toBe(workerPrompt(structuredClone(base()), 3, opts));
  });
});

describe('parseStatusLine', () => {
  it.each([
    ['COMPLETED: wrote it', { status: 'COMPLETED', text: 'wrote it' }],
    ['FAILED: tests fail', { status: 'FAILED', text: 'tests fail' }],
    ['BLOCKED: need a key', { status: 'BLOCKED', text: 'need a key' }],
    ['COMPLETED:\tafter a tab', { status: 'COMPLETED', text: 'after a tab' }],
    ['COMPLETED:', { status: 'COMPLETED', text: '' }],
    ['   COMPLETED: indented   ', { status: 'COMPLETED', text: 'indented' }],
    ['work\r\nCOMPLETED: crlf\r\n', { status: 'COMPLETED', text: 'crlf' }],
    // As models write it: in emphasis or code, after a list or quote marker.
    ['**COMPLETED:** bold claim', { status: 'COMPLETED', text: 'bold claim' }],
    ['**COMPLETED**: bold word', { status: 'COMPLETED', text: 'bold word' }],
    ['__FAILED__: underscores', { status: 'FAILED', text: 'underscores' }],
    ['`COMPLETED: quoted`', { status: 'COMPLETED', text: 'quoted' }],
    ['`BLOCKED:`', { status: 'BLOCKED', text: '' }],
    ['- COMPLETED: a list item', { status: 'COMPLETED', text: 'a list item' }],
    ['1. FAILED: numbered', { status: 'FAILED', text: 'numbered' }],
    ['> **BLOCKED:** quoted and bold', { status: 'BLOCKED', text: 'quoted and bold' }],
    ['COMPLETED: wrote `src/a.ts` and *docs*', { status: 'COMPLETED', text: 'wrote `src/a.ts` and *docs*' }],
    ['COMPLETED: _', { status: 'COMPLETED', text: '_' }],
  ] as const)('%j', (input, expected) => {
    expect(parseStatusLine(input)).toEqual(expected);
  });

  it('the LAST matching line wins', () => {
    expect(parseStatusLine('FAILED: first try broke\nretrying…\nCOMPLETED: second try worked')).toEqual({ status: 'COMPLETED', text: 'second try worked' });
    expect(parseStatusLine('COMPLETED: looked fine\nthen the tests ran\nFAILED: they did not pass\n\nThanks!')).toEqual({
      status: 'FAILED',
      text: 'they did not pass',
    });
  });

  it.each([
    '',
    'all done',
    'completed: lower case',
    'Status: COMPLETED: prefixed',
    'COMPLETED - no colon',
    'COMPLETED:no space after the colon',
    'DONE: other word',
    '**COMPLETED:**glued',
    '**done**: COMPLETED: in the middle',
    '-COMPLETED: no space after the marker',
  ])('no status in %j', (input) => {
    expect(parseStatusLine(input)).toBeNull();
  });

  it('finds the final status line after any amount of other text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string().filter((s) => !/^\s*(COMPLETED|FAILED|BLOCKED):/m.test(s))),
        fc.constantFrom('COMPLETED', 'FAILED', 'BLOCKED'),
        fc.string({ maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)),
        (before, status, summary) => {
          const text = [...before, `${status}: ${summary}`].join('\n');
          expect(parseStatusLine(text)).toEqual({ status, text: summary.trim() });
        },
      ),
      { numRuns: 200 },
    );
  });
});
