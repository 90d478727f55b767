// Starts one PostgreSQL for the whole run (DATABASE_URL, or a throwaway embedded cluster) and
// migrates a template database that every test file clones (see test/support/db.ts). The db and
// node projects both name this file; vitest runs it once per project in the same process, so the
// first start is shared and the last teardown stops it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbedded } from '../../queue/embedded.ts';
import { migrate } from '../../queue/migrate.ts';
import { withDatabase } from '../../queue/database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    pgEmbeddedDir: string;
  }
}

interface RunCluster {
  adminUrl: string;
  template: string;
  embeddedDir: string;
  stop(): Promise<void>;
}

// Each project loads this module afresh: the run's cluster lives on the process instead.
const SHARED = Symbol.for('herald.test.cluster');
type Shared = { cluster: Promise<RunCluster>; users: number };
const shared = globalThis as typeof globalThis & { [SHARED]?: Shared };

async function startCluster(): Promise<RunCluster> {
  let adminUrl = process.env.DATABASE_URL;
  let tmp: string | undefined;
  let embedded: Awaited<ReturnType<typeof startEmbedded>> | undefined;
  if (!adminUrl) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-test-'));
    fs.chmodSync(tmp, 0o755);
    // Prepared transactions on, so the feed's tests can prove the horizon against them too.
    embedded = await startEmbedded(tmp, { database: 'postgres', settings: { max_prepared_transactions: '10' } });
    adminUrl = embedded.url;
  }
  const template = `herald_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  await migrate(withDatabase(adminUrl, template));
  await admin.end();
  const url = adminUrl;
  return {
    adminUrl: url,
    template,
    embeddedDir: embedded?.dataDir ?? '',
    async stop() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      // Leftover per-file databases of this run, then the template.
      const { rows } = await c.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`herald_t_${process.pid}_%`]);
      for (const r of rows) await c.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`).catch(() => {});
      await c.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
      await c.end();
      await embedded?.stop();
      if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

export default async function setup(project: TestProject) {
  const run = (shared[SHARED] ??= { cluster: startCluster(), users: 0 });
  run.users++;
  const cluster = await run.cluster;
  project.provide('pgAdminUrl', cluster.adminUrl);
  project.provide('pgTemplate', cluster.template);
  project.provide('pgEmbeddedDir', cluster.embeddedDir);

  return async () => {
    if (--run.users > 0) return;
    delete shared[SHARED];
    await cluster.stop();
  };
}
