import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Test files that replace a module with `vi.mock`: each runs in a process of its own, since a
 * mock applies only where the module is not loaded yet.
 */
const MOCKING = ['test/plan-store.test.ts'];

export default defineConfig({
  test: {
    // Bundles the scripts the end-to-end tests spawn, once (test/support/script-build.ts).
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // One test file more than there are cores: the end-to-end files spend part of their time
    // waiting on the processes they start, and a file more fills those waits (on 2 cores, 2 files
    // at a time took 335 s, 3 took 286 s and 4 took 291 s, for the same CPU).
    maxWorkers: availableParallelism() + 1,
    // Runs in tests make their worktrees in the test run's temporary folder, never in ~/.cache:
    // FOREMAN_WORKTREES is set by the global setup, with TMPDIR.
    projects: [
      // A worker process runs file after file with the modules it already loaded: a new process
      // and a fresh load of vitest and the sources per file cost about 0.6 s of CPU each (on 2
      // cores the suite took 4 min 37-47 s isolated, 4 min 7 s not). Every file restores what
      // it changes of the process (environment variables, PATH) itself.
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: MOCKING, isolate: false } },
      { extends: true, test: { name: 'isolated', include: MOCKING } },
    ],
  },
});
