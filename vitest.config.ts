import { defineConfig } from 'vitest/config';
import { ownClusterOnly, projectFiles } from './test/support/projects.ts';

// Unit and integration tests sit beside their code (queue/, worker/, server/, web/); cross-process
// tests live in test/. Four projects, each file placed by what it imports
// (test/support/projects.ts; docs/testing.md):
// - pure: no database, no process, no HTTP: threads shared without isolation, no PostgreSQL.
// - db: real PostgreSQL: one cluster per run (embedded, or DATABASE_URL), one database per test
//   file cloned from a migrated template.
// - node: processes, the CLI, HTTP and the stream, on the same cluster.
// - board: the board in Chromium; one Chromium and one shared board stack for the run.
// `npm test` runs all four; CI runs db and node again on PostgreSQL 15 and Node 20.
const files = projectFiles();

const common = {
  // A process warning (a listener leak, say) fails the test that caused it.
  setupFiles: ['test/support/no-warnings.ts'],
  testTimeout: 60_000,
  hookTimeout: 120_000,
};
// Without isolation a fork keeps its loaded modules from one file to the next: importing the
// product anew for every file cost a third of the run's CPU (db 38 → 14 s, node 292 → 190 s of
// user time). Each file still gets its own database, and a file that changes process state
// (an environment variable, fake timers) puts it back in its afterEach.
const onPostgres = { ...common, globalSetup: ['test/support/global-setup.ts'], pool: 'forks' as const, isolate: false };

export default defineConfig({
  test: {
    // Three files at once on two cores: most of a file's time waits on spawned processes,
    // PostgreSQL and Chromium, and with two the cores were about half idle through a run.
    maxWorkers: 3,
    projects: [
      { test: { ...common, name: 'pure', include: files.pure, pool: 'threads', isolate: false } },
      {
        test: {
          ...onPostgres,
          name: 'db',
          // With DATABASE_URL the run is there for that server: a file that only ever boots an
          // embedded cluster of its own would repeat the embedded run.
          include: process.env.DATABASE_URL ? files.db.filter((f) => !ownClusterOnly(f)) : files.db,
        },
      },
      {
        test: {
          ...onPostgres,
          name: 'node',
          include: files.node,
          // A node test is a chain of spawned workers and servers (each a tsx start of seconds on a
          // loaded 2-core machine): task-files and worker-blip outgrew a minute under load 12.
          testTimeout: 120_000,
        },
      },
      {
        test: {
          ...onPostgres,
          name: 'board',
          include: files.board,
          // A browser test is many steps, each waiting (20–30 s at most) for what the screen
          // shows: on a loaded 2-core machine the sum outgrows a minute.
          testTimeout: 180_000,
          globalSetup: [...onPostgres.globalSetup, 'test/support/board-global-setup.ts'],
        },
      },
    ],
  },
});
