// A remote program's temporary folders in a host's work dir (`.t/<pid, base 36>-…`): a run
// starting there removes those whose program is gone (one killed outright left them), and keeps
// those of live processes and what is not a program's.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeLeftTemporaryFolders } from '../../src/host/program-folders.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe('removeLeftTemporaryFolders', () => {
  it('removes the folders of programs that are gone, keeps those of live ones and anything else', async () => {
    const workDir = await mkdtemp(join(tmpdir(), 'foreman-host-tmp-'));
    dirs.push(workDir);
    // A process that ran and ended: its pid names no live process now.
    const ended = spawnSync('/bin/sh', ['-c', 'echo $$']);
    const gone = Number(ended.stdout.toString().trim()).toString(36);
    const live = process.pid.toString(36);
    const names = [`${gone}-3`, `${gone}-h`, `${live}-c12`, 'notes', '1-x'];
    for (const name of names) {
      await mkdir(join(workDir, '.t', name), { recursive: true });
      await writeFile(join(workDir, '.t', name, 'left'), 'x');
    }
    expect(removeLeftTemporaryFolders(workDir).sort()).toEqual([`${gone}-3`, `${gone}-h`]);
    expect((await readdir(join(workDir, '.t'))).sort()).toEqual([`${live}-c12`, '1-x', 'notes'].sort());
  });

  it('does nothing in a work dir with no temporary folders', async () => {
    const workDir = await mkdtemp(join(tmpdir(), 'foreman-host-tmp-'));
    dirs.push(workDir);
    expect(removeLeftTemporaryFolders(workDir)).toEqual([]);
    expect(existsSync(join(workDir, '.t'))).toBe(false);
  });
});
