import { defineConfig } from 'vitest/config';

// `npm run test:system`: chaos, load, fuzz, security and the pooler, against real processes and
// real PostgreSQL. Files run one at a time: they are heavy, and chaos restarts PostgreSQL.
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/system/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/no-warnings.ts'],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
