// The probe's setup command in the sandbox (#15): it writes only in the scratch worktree, its own
// TMPDIR and the package managers' caches, and reaches the package registries (the defaults, the
// npm registry configured here, the plan's `context.setupNetwork`) and nothing else. With the
// real npm registry: `npm install is-number@7.0.0` succeeds in the sandbox and a sandboxed check
// that requires it passes. Tests that need the sandbox say so and skip when it is missing; the
// one that needs the registry says so and skips when it cannot be reached.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_SETUP_NETWORK,
  packageCacheDirectories,
  registryHost,
  sandboxSupport,
  setupCommandSandbox,
  setupNetworkHosts,
} from '../../src/adapters/sandbox/sandbox.ts';
import { probeFindings, probeKey } from '../../src/core/sandbox/probe.ts';
import { validatePlan } from '../../src/core/plan/validate.ts';
import { runProbe } from '../support/probe.ts';
import { afterEachCleanups, tempRepoIn } from '../support/git-repo.ts';
import { fakeTask, makePlan } from '../support/plans.ts';
import { expectSchema } from '../skills/support.ts';

const support = await sandboxSupport();
if (!support.ok) console.warn(`probe setup sandbox tests: the sandboxed cases are skipped, the sandbox cannot run here: ${support.error}`);

/** Whether the npm registry answers within 20 s (this machine's only reachable network). */
function registryReachable(): boolean {
  try {
    execFileSync('npm', ['view', 'is-number@7.0.0', 'version'], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}
const online = support.ok && registryReachable();
if (support.ok && !online)
  console.warn('probe setup sandbox tests: the install case is skipped, the npm registry (registry.npmjs.org) cannot be reached from here');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foreman-setup-sandbox-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
const cleanups = afterEachCleanups();
const repo = tempRepoIn(cleanups);

const check = (command: string) => ({ criterion: command, check: command });
const packageJson = `${JSON.stringify({ name: 'probe-setup', version: '1.0.0', private: true })}\n`;
/** A check that passes only when is-number is installed and works. */
const usesIsNumber = "const isNumber = require('is-number');\nprocess.exit(isNumber(5) && !isNumber('x') ? 0 : 1);\n";
const options = { checkTimeoutMs: 60_000, timeoutMs: 240_000, timeoutFlag: 'plan probe --timeout', sandbox: true };
/** An environment whose npm cache is a fresh directory (not created yet), so nothing comes from the machine's cache. */
const freshCache = (name: string) => {
  const cache = join(dir, name);
  return { cache, env: { ...process.env, npm_config_cache: cache } };
};

describe("the setup command's hosts", () => {
  it("are the package registries plus the plan's hosts; `no-defaults` makes the plan's replace them", () => {
    expect(setupNetworkHosts(undefined)).toEqual([...DEFAULT_SETUP_NETWORK]);
    expect(DEFAULT_SETUP_NETWORK).toEqual(
      expect.arrayContaining(['registry.npmjs.org', 'registry.yarnpkg.com', 'pypi.org', 'files.pythonhosted.org', 'crates.io', 'proxy.golang.org']),
    );
    expect(setupNetworkHosts(['npm.example.com', 'registry.npmjs.org'], ['npm.corp.example:8443'])).toEqual([
      ...DEFAULT_SETUP_NETWORK,
      'npm.corp.example:8443',
      'npm.example.com',
    ]);
    expect(setupNetworkHosts(['no-defaults', 'npm.example.com'], ['npm.corp.example'])).toEqual(['npm.example.com']);
    expect(setupNetworkHosts(['no-defaults'])).toEqual([]);
  });

  it("take the configured npm registry's host, with its port when it names one", () => {
    expect(registryHost('https://registry.npmjs.org/')).toBe('registry.npmjs.org');
    expect(registryHost('http://npm.corp.example:8443/repository/npm/')).toBe('npm.corp.example:8443');
    expect(registryHost('file:///srv/npm')).toBeNull();
    expect(registryHost('not a url')).toBeNull();
  });

  it("are a plan field the schema checks; `*` is refused, and they are part of the probe's key when set", () => {
    const plan = makePlan([fakeTask('a', { create: ['a.txt'], acceptance: [check('test -f a.txt')] })], {
      context: { setupCommand: 'npm ci', setupNetwork: ['npm.example.com'] },
    });
    expect(validatePlan(plan).ok).toBe(true);
    const star = validatePlan({ ...plan, context: { setupNetwork: ['*'] } });
    expect(star.ok).toBe(false);
    if (!star.ok) expect(star.error.join('\n')).toContain('setupNetwork');
    const without = { ...plan, context: { setupCommand: 'npm ci' } };
    expect(probeKey(plan)).not.toBe(probeKey(without));
    expect(probeKey(without)).toBe(probeKey({ ...without, context: { setupCommand: 'npm ci' } }));
  });
});

describe("the package managers' caches", () => {
  it("follow the environment (XDG, the managers' own variables) and leave out cargo's home and pnpm's binaries", () => {
    const env = { HOME: '/h', XDG_CACHE_HOME: '/c', YARN_CACHE_FOLDER: '/y', PIP_CACHE_DIR: '/p', GOPATH: '/g:/g2' };
    expect(packageCacheDirectories(env, '/n', 'linux')).toEqual([
      '/n',
      '/y',
      '/h/.yarn/berry',
      '/h/.local/share/pnpm/store',
      '/c/pnpm',
      '/p',
      '/g/pkg/mod',
      '/c/go-build',
    ]);
    expect(packageCacheDirectories({ HOME: '/h' }, '/h/.npm', 'linux')).toEqual([
      '/h/.npm',
      '/h/.cache/yarn',
      '/h/.yarn/berry',
      '/h/.local/share/pnpm/store',
      '/h/.cache/pnpm',
      '/h/.cache/pip',
      '/h/go/pkg/mod',
      '/h/.cache/go-build',
    ]);
    expect(packageCacheDirectories({ HOME: '/h', XDG_CACHE_HOME: 'relative' }, '/n', 'darwin')).toContain('/h/Library/Caches/Yarn');
    expect(packageCacheDirectories({ HOME: '/h', XDG_CACHE_HOME: 'relative' }, '/n', 'linux')).toContain('/h/.cache/pip');
    expect(packageCacheDirectories({ HOME: '/h' }, '/n', 'linux').some((d) => d.includes('.cargo'))).toBe(false);
  });

  it("include npm's cache as npm reads it (npm_config_cache here), created when missing, and its registry's host", async () => {
    const { cache, env } = freshCache('resolved-cache');
    const sandbox = await setupCommandSandbox(dir, dir, ['npm.example.com'], { ...env, npm_config_registry: 'https://npm.corp.example:8443/' });
    expect(sandbox.writable.slice(0, 2)).toEqual([dir, cache]);
    expect(existsSync(cache)).toBe(true);
    expect(sandbox.allowedDomains).toEqual([...DEFAULT_SETUP_NETWORK, 'npm.corp.example:8443', 'npm.example.com']);
  });
});

describe.runIf(support.ok)('the setup command in the sandbox', () => {
  it.runIf(online)(
    'installs a dependency from the npm registry into a fresh cache, and a sandboxed check that requires it passes',
    async () => {
      const r = await repo({ 'package.json': packageJson, 'check.js': usesIsNumber });
      const { cache, env } = freshCache('install-cache');
      const plan = makePlan([fakeTask('needs is-number', { modify: ['check.js'], acceptance: [check('node check.js')] })], {
        context: { setupCommand: 'npm install --no-audit --no-fund is-number@7.0.0' },
      });
      const probed = await runProbe(plan, { repo: r.dir, env, ...options });
      if (!probed.ok) throw new Error(`probe failed: ${JSON.stringify(probed.error)}`);
      const { setup, tasks } = probed.value;
      expect(setup?.output).not.toMatch(/EROFS|403|ENOTFOUND/);
      expect(setup?.passed).toBe(true);
      expect(tasks[0]!.checks[0]!.outcome).toBe('passed');
      // The download went through the cache foreman opened for it; the person's tree got nothing.
      expect(await readdir(cache)).toContain('_cacache');
      expect(existsSync(join(r.dir, 'node_modules'))).toBe(false);
    },
    240_000,
  );

  it('reaches no host but the allowed ones: with `no-defaults` and another host, npm install is refused', async () => {
    const r = await repo({ 'package.json': packageJson, 'check.js': usesIsNumber });
    const { env } = freshCache('refused-cache');
    const plan = makePlan([fakeTask('needs is-number', { modify: ['check.js'], acceptance: [check('node check.js')] })], {
      context: {
        setupCommand: 'npm install --no-audit --no-fund --prefer-online --fetch-retries=0 is-number@7.0.0',
        setupNetwork: ['no-defaults', 'example.org'],
      },
    });
    const probed = await runProbe(plan, { repo: r.dir, env: { ...env, npm_config_registry: 'https://registry.npmjs.org/' }, ...options });
    if (!probed.ok) throw new Error(`probe failed: ${JSON.stringify(probed.error)}`);
    expect(probed.value.setup?.passed).toBe(false);
    expect(probed.value.setup?.output).toMatch(/403|ECONNREFUSED|ENOTFOUND|EAI_AGAIN/);
    expect(probed.value.tasks[0]!.checks[0]!.outcome).toBe('not-run');
  }, 240_000);

  it("fails when it writes outside the scratch worktree: in the temporary directory, or in the person's repository", async () => {
    const r = await repo({ 'package.json': packageJson });
    const outside = await mkdtemp(join(tmpdir(), 'foreman-setup-outside-'));
    cleanups.push(() => rm(outside, { recursive: true, force: true }));
    for (const target of [join(outside, 'outside-$$'), join(r.dir, 'escaped.txt')]) {
      const plan = makePlan([fakeTask('t', { create: ['x.txt'], acceptance: [check('test -f x.txt')] })], {
        context: { setupCommand: `touch ${target} && touch inside.txt` },
      });
      const probed = await runProbe(plan, { repo: r.dir, ...options });
      if (!probed.ok) throw new Error(`probe failed: ${JSON.stringify(probed.error)}`);
      expect(probed.value.setup?.passed, target).toBe(false);
      expect(probed.value.setup?.output).toMatch(/Read-only file system/);
      expect(probed.value.setup?.sandboxed).toBe(true);
      await expectSchema('probe', probed.value);
      // What the person is told names the sandbox's limits.
      expect(probeFindings(probed.value).problems[0]).toContain('it ran in the sandbox');
    }
    expect(await readdir(outside)).toEqual([]);
    expect(existsSync(join(r.dir, 'escaped.txt'))).toBe(false);
    // Writes in the scratch worktree itself are allowed.
    const inside = makePlan([fakeTask('t', { create: ['x.txt'], acceptance: [check('test -f built.txt')] })], {
      context: { setupCommand: 'touch built.txt && touch "$TMPDIR/own"' },
    });
    const probed = await runProbe(inside, { repo: r.dir, ...options });
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.setup?.passed).toBe(true);
    expect(probed.value.tasks[0]!.checks[0]!.outcome).toBe('passed');
  }, 240_000);

  it('without the sandbox the same setup command writes outside (so the sandbox is what stops it)', async () => {
    const r = await repo({ 'package.json': packageJson });
    const outside = await mkdtemp(join(tmpdir(), 'foreman-setup-outside-'));
    cleanups.push(() => rm(outside, { recursive: true, force: true }));
    const plan = makePlan([fakeTask('t', { create: ['x.txt'], acceptance: [check('test -f x.txt')] })], {
      context: { setupCommand: `touch ${join(outside, 'unsandboxed')}` },
    });
    const probed = await runProbe(plan, { repo: r.dir, ...options, sandbox: false });
    if (!probed.ok) throw new Error('probe failed');
    expect(probed.value.setup?.passed).toBe(true);
    expect(probed.value.setup?.sandboxed).toBe(false);
    expect(await readdir(outside)).toEqual(['unsandboxed']);
  });
});
