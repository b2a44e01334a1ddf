// The whole output of a failed acceptance check, appended to the worker's log by a headless run.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutputSection, logFailedChecks } from '../../src/adapters/worker/worker-log.ts';
import type { AcceptanceResult } from '../../src/core/attempt/attempt-failure.ts';

const timeLimit = { ms: 300_000, flag: '--check-timeout' as const };
const result = (over: Partial<AcceptanceResult>): AcceptanceResult => ({
  criterion: 'tests pass',
  check: 'npm test',
  passed: false,
  exitCode: 1,
  timedOut: false,
  timeLimit,
  output: 'FAIL a.test.ts\n',
  ...over,
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-worker-log-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('logFailedChecks', () => {
  it('appends each failed check whole, after what the worker wrote, and nothing for passed ones', async () => {
    const log = join(dir, 'worker-0.log');
    await writeFile(log, '==== outcome: reported COMPLETED: done · 1.0s ====\n');
    const long = Array.from({ length: 80 }, (_, i) => `line ${i}`).join('\n');
    await logFailedChecks(log, [
      result({ output: long }),
      result({ check: 'npm run lint', passed: true, exitCode: 0, output: 'clean\n' }),
      result({ check: 'npm run e2e', exitCode: null, timedOut: true, output: '' }),
    ]);
    expect(await readFile(log, 'utf8')).toBe(
      [
        '==== outcome: reported COMPLETED: done · 1.0s ====',
        '==== acceptance check failed (tests pass): `npm test` exited 1; its whole output ====',
        long,
        '==== end of its output ====',
        '==== acceptance check failed (tests pass): `npm run e2e` timed out after 300s (the limit set by --check-timeout); its whole process group was ended; its whole output ====',
        '(it printed nothing)',
        '==== end of its output ====',
        '',
      ].join('\n'),
    );
  });

  it('writes nothing when every check passed, and fails nothing when the log cannot be written', async () => {
    const log = join(dir, 'worker-1.log');
    await logFailedChecks(log, [result({ passed: true, exitCode: 0 })]);
    await expect(readFile(log, 'utf8')).rejects.toThrow(/ENOENT/);
    await expect(logFailedChecks(join(dir, 'no-such-dir', 'worker-2.log'), [result({})])).resolves.toBeUndefined();
  });

  it('names what the sandbox refused beside how the check ended', () => {
    expect(checkOutputSection(result({ output: 'npm error 403\n', sandboxRefusal: 'the sandbox refused …' }))).toBe(
      '==== acceptance check failed (tests pass): `npm test` exited 1 (the sandbox refused …); its whole output ====\nnpm error 403\n==== end of its output ====\n',
    );
  });

  it('keeps the output as the check printed it, a last line without its newline included', () => {
    expect(checkOutputSection(result({ output: 'a\nb' }))).toBe(
      '==== acceptance check failed (tests pass): `npm test` exited 1; its whole output ====\na\nb\n==== end of its output ====\n',
    );
  });
});
