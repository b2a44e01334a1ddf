// Whether the sandbox runs here, remembered across runs (src/adapters/sandbox/sandbox-support.ts): a yes
// is kept under a hash of the machine's facts and believed for a day; any change of a fact asks
// again; a no is never kept.

import { execa } from 'execa';
import { chmod, mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { err, ok, type Result } from '../src/core/result.ts';
import { keepYes, rememberedSupport, SUPPORT_KEPT_MS, supportCacheFile, supportKey } from '../src/adapters/sandbox/sandbox-support.ts';
import { sandboxSupport } from '../src/adapters/sandbox/sandbox.ts';
import { repoRoot, tsxLoader } from './support/execute.ts';

let dir: string;
let bin: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-sandbox-support-'));
  bin = join(dir, 'bin');
  await mkdir(bin);
  for (const tool of ['bwrap', 'socat', 'rg']) {
    await writeFile(join(bin, tool), '#!/bin/sh\nexit 0\n');
    await chmod(join(bin, tool), 0o755);
  }
  await writeFile(join(dir, 'srt.mjs'), '// the runtime\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const keyWith = (path: string) => supportKey({ env: { PATH: path }, platform: 'linux', sandboxCli: join(dir, 'srt.mjs'), nodePath: process.execPath });

describe('the facts a yes is kept under', () => {
  it('are the same while nothing changes, and change with a tool, the runtime or the PATH', async () => {
    const key = keyWith(bin);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(keyWith(bin)).toBe(key);
    // A tool upgraded in place.
    await utimes(join(bin, 'socat'), new Date(), new Date(Date.now() + 60_000));
    const upgraded = keyWith(bin);
    expect(upgraded).not.toBe(key);
    // The runtime's CLI changed.
    await writeFile(join(dir, 'srt.mjs'), '// the runtime, a later version\n');
    expect(keyWith(bin)).not.toBe(upgraded);
    // Another bwrap found first on the PATH.
    const other = join(dir, 'other');
    await mkdir(other);
    await writeFile(join(other, 'bwrap'), '#!/bin/sh\nexit 1\n');
    await chmod(join(other, 'bwrap'), 0o755);
    expect(keyWith(`${other}:${bin}`)).not.toBe(keyWith(bin));
  });

  it('are none (nothing is kept) when a tool is missing or not executable, or on a platform the sandbox does not know', async () => {
    await rm(join(bin, 'rg'));
    expect(keyWith(bin)).toBeNull();
    await writeFile(join(bin, 'rg'), 'not a program\n');
    expect(keyWith(bin)).toBeNull();
    expect(keyWith('')).toBeNull();
    expect(supportKey({ env: { PATH: bin }, platform: 'win32', sandboxCli: join(dir, 'srt.mjs'), nodePath: process.execPath })).toBeNull();
  });
});

describe('a remembered answer', () => {
  const asking = (answer: Result<void, string>) => {
    const asked: number[] = [];
    return {
      asked,
      ask: async () => {
        asked.push(1);
        return answer;
      },
    };
  };

  it('a yes is asked once and then read back while the facts and the day last', async () => {
    const file = supportCacheFile(join(dir, 'cache'));
    let now = 1_000_000;
    const yes = asking(ok(undefined));
    const remembered = () => rememberedSupport({ file, key: 'facts-1', now: () => now, ask: yes.ask });
    expect(await remembered()).toEqual(ok(undefined));
    expect(yes.asked).toHaveLength(1);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ key: 'facts-1', checkedAt: 1_000_000 });
    now += SUPPORT_KEPT_MS - 1;
    expect(await remembered()).toEqual(ok(undefined));
    expect(yes.asked).toHaveLength(1);
    // Other facts: asked again.
    expect(await rememberedSupport({ file, key: 'facts-2', now: () => now, ask: yes.ask })).toEqual(ok(undefined));
    expect(yes.asked).toHaveLength(2);
    // A day after it was last asked: asked again.
    now += SUPPORT_KEPT_MS;
    await rememberedSupport({ file, key: 'facts-2', now: () => now, ask: yes.ask });
    expect(yes.asked).toHaveLength(3);
  });

  it('a no is never kept, and does not erase a kept yes of other facts', async () => {
    const file = supportCacheFile(join(dir, 'cache'));
    await keepYes(file, 'facts-1', 5);
    const no = asking(err('bubblewrap (bwrap) not installed'));
    for (let k = 0; k < 2; k++)
      expect(await rememberedSupport({ file, key: 'facts-2', now: () => 10, ask: no.ask })).toEqual(err('bubblewrap (bwrap) not installed'));
    expect(no.asked).toHaveLength(2);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ key: 'facts-1', checkedAt: 5 });
  });

  it('is not believed from a damaged file, a time in the future, or without facts', async () => {
    const file = supportCacheFile(join(dir, 'cache'));
    const yes = asking(ok(undefined));
    await mkdir(join(dir, 'cache'), { recursive: true });
    await writeFile(file, '{"key": "facts-1", "checkedAt": ');
    await rememberedSupport({ file, key: 'facts-1', now: () => 10, ask: yes.ask });
    expect(yes.asked).toHaveLength(1);
    await keepYes(file, 'facts-1', 1_000);
    await rememberedSupport({ file, key: 'facts-1', now: () => 10, ask: yes.ask });
    expect(yes.asked).toHaveLength(2);
    await rm(file);
    await rememberedSupport({ file, key: null, now: () => 10, ask: yes.ask });
    await rememberedSupport({ file, key: null, now: () => 10, ask: yes.ask });
    expect(yes.asked).toHaveLength(4);
    await expect(readFile(file)).rejects.toThrow();
  });
});

const here = await sandboxSupport();

describe.skipIf(!here.ok)('on this machine', () => {
  it("a second process finds the first one's yes and does not ask again", async () => {
    const cache = join(dir, 'xdg');
    const probe = `import { sandboxSupport } from ${JSON.stringify(join(repoRoot, 'src/adapters/sandbox/sandbox.ts'))};
const r = await sandboxSupport();
console.log(JSON.stringify({ ok: r.ok }));`;
    const run = () => execa('node', ['--import', tsxLoader, '--input-type=module', '-e', probe], { env: { XDG_CACHE_HOME: cache }, reject: false });
    const first = await run();
    expect(first.stdout).toBe('{"ok":true}');
    const kept = await readFile(supportCacheFile(join(cache, 'foreman')), 'utf8');
    const second = await run();
    expect(second.stdout).toBe('{"ok":true}');
    // Not asked again: the kept answer is the first one's, to the millisecond.
    expect(await readFile(supportCacheFile(join(cache, 'foreman')), 'utf8')).toBe(kept);
  });
});
