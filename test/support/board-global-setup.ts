// What the board project's files share, started once per run (after global-setup.ts, which
// gives the run's PostgreSQL): one Chromium, which each file connects to and opens its own
// contexts in, and one board stack on a database of its own: a `herald server`, one more with
// HERALD_TOKENS, and a worker that runs the gated tasks. A file on the shared stack keeps to its
// own queues, so files running side by side never see each other's jobs; a file that needs a
// stack to itself (a server it stops, a worker that takes some queues only, a session that holds
// the whole database's stream back) starts its own with startBoardStack.
import pg from 'pg';
import { chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { withDatabase } from '../../queue/database.ts';
import { CHROMIUM_OPTIONS, ensureFreshBoard, SHARED_TOKENS, startProcesses } from './board-processes.ts';
import { GATED_TASKS_DIR } from './gates.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's Chromium, for `chromium.connect`. */
    boardChromium: string;
    /** The shared stack: its plain server, its server with SHARED_TOKENS, and its database. */
    boardShared: { url: string; securedUrl: string; databaseUrl: string };
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export default async function setup(project: TestProject) {
  const { pgAdminUrl, pgTemplate } = project.getProvidedContext();
  // global-setup.ts drops what is left of this run's herald_t_<pid>_ databases.
  const name = `herald_t_${process.pid}_board_shared`;
  const databaseUrl = withDatabase(pgAdminUrl, name);
  await ensureFreshBoard();
  await admin(pgAdminUrl, `CREATE DATABASE ${name} TEMPLATE ${pgTemplate}`);
  const browser = chromium.launchServer(CHROMIUM_OPTIONS);
  const stack = startProcesses({ databaseUrl, workerArgs: ['--concurrency', '30', '--tasks', GATED_TASKS_DIR], serverEnvs: [{}, { HERALD_TOKENS: SHARED_TOKENS }] });
  const [server, started] = await Promise.allSettled([browser, stack]);
  if (server.status === 'rejected' || started.status === 'rejected') {
    if (server.status === 'fulfilled') await server.value.close();
    if (started.status === 'fulfilled') await started.value.stop();
    await admin(pgAdminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    throw server.status === 'rejected' ? server.reason : (started as PromiseRejectedResult).reason;
  }
  const [plain, secured] = started.value.servers;
  project.provide('boardChromium', server.value.wsEndpoint());
  project.provide('boardShared', { url: plain.url, securedUrl: secured.url, databaseUrl });
  return async () => {
    await started.value.stop();
    await server.value.close();
    await admin(pgAdminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
}
