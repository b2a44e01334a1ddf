import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bundles the scripts the end-to-end tests spawn, once (test/support/script-build.ts).
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // End-to-end tests spawn real processes; two cores, so keep files few at a time.
    maxWorkers: 2,
    // Runs in tests make their worktrees under the temporary directory, never in ~/.cache.
    env: { FOREMAN_WORKTREES: join(tmpdir(), 'foreman-test-worktrees') },
  },
});
