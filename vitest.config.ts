import { defineConfig } from 'vitest/config';

// Unit and integration tests sit beside their code (queue/, worker/, server/); cross-process
// tests live in test/. All of them run against real PostgreSQL: one cluster per run (embedded,
// or DATABASE_URL), one database per test file cloned from a migrated template.
export default defineConfig({
  test: {
    include: ['{queue,worker,server,web,test}/**/*.test.ts'],
    exclude: ['test/system/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // A process warning (a listener leak, say) fails the test that caused it.
    setupFiles: ['test/support/no-warnings.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
