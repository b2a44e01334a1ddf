// The person's deny rules as foreman's own sandboxed commands hold them (src/adapters/sandbox/person-denies.ts):
// read from the repository's settings and, in a Claude Code session, from its command line
// (`CLAUDE_PID`), mapped as the worker hook maps them; what cannot be held, or read, is said.
// That the runtime then refuses the reads is test/sandbox.test.ts's.

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { personDenies, unheldNotice } from '../../src/adapters/sandbox/person-denies.ts';

let base: string;
let repo: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), 'foreman-person-denies-')));
  repo = join(base, 'repo');
  await mkdir(join(repo, '.claude'), { recursive: true });
  await writeFile(join(repo, '.claude/settings.json'), JSON.stringify({ permissions: { deny: ['Read(./.env)', 'Edit(./package-lock.json)', 'Bash(rm:*)'] } }));
  env = { HOME: join(base, 'home') };
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const scope = () => ({ repo, cwd: join(base, 'checkout'), writable: [join(base, 'checkout'), join(base, 'tmp')] });

/** A process whose command line is `node -e … <args>`, standing for a Claude Code session's; ended afterwards. */
async function withSession<T>(args: string[], use: (pid: number) => Promise<T>): Promise<T> {
  const child = spawn(process.execPath, ['-e', 'console.log("ready"); setTimeout(() => {}, 30000)', '--', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    // Until it runs, /proc shows the command line of the process it was forked from.
    await new Promise((resolve, reject) => {
      child.stdout.once('data', resolve);
      child.once('exit', (code) => reject(new Error(`the stand-in session exited (${code})`)));
    });
    return await use(child.pid!);
  } finally {
    child.kill();
  }
}

describe('personDenies', () => {
  it('maps the repository’s rules under the repository and the command’s checkout alike', async () => {
    expect(await personDenies(scope(), env)).toEqual({
      denies: { denyRead: [join(repo, '.env'), join(base, 'checkout/.env')], denyWrite: [join(base, 'checkout/package-lock.json')] },
      unheld: [],
      unread: [],
    });
  });

  it('takes a session’s --disallowedTools too, and says what it could not read', async () => {
    await withSession(['--disallowedTools', `Read(/${base}/secret.txt)`, 'Read(./x'], async (pid) => {
      const held = await personDenies(scope(), { ...env, CLAUDE_PID: String(pid) });
      expect(held.denies.denyRead).toContain(join(base, 'secret.txt'));
      expect(held.unread).toEqual(['--disallowedTools Read(./x']);
      expect(unheldNotice(held)).toBe(
        "--disallowedTools Read(./x could not be read exactly, so the Read and Edit deny rules there do not hold in it. Your other Read and Edit deny rules hold in it, as in Claude Code's own sandbox",
      );
    });
  });
});
