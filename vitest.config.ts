import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bundles the scripts the end-to-end tests spawn, once (test/support/script-build.ts).
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One test file more than there are cores: the end-to-end files spend part of their time
    // waiting on the processes they start, and a file more fills those waits (on 2 cores, 2 files
    // at a time took 335 s, 3 took 286 s and 4 took 291 s, for the same CPU).
    maxWorkers: availableParallelism() + 1,
    // Runs in tests make their worktrees under the temporary directory, never in ~/.cache.
    env: { FOREMAN_WORKTREES: join(tmpdir(), 'foreman-test-worktrees') },
  },
});
