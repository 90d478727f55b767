// Starts one PostgreSQL for the whole run (DATABASE_URL, or a throwaway embedded cluster) and
// migrates a template database that every test file clones (see test/support/db.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbedded, type EmbeddedPostgres } from '../../queue/embedded.ts';
import { migrate } from '../../queue/migrate.ts';
import { withDatabase } from '../../queue/database.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplate: string;
    pgEmbeddedDir: string;
  }
}

let embedded: EmbeddedPostgres | undefined;
let tmp: string | undefined;

export default async function setup(project: TestProject) {
  let adminUrl = process.env.DATABASE_URL;
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
  project.provide('pgAdminUrl', adminUrl);
  project.provide('pgTemplate', template);
  project.provide('pgEmbeddedDir', embedded?.dataDir ?? '');

  return async () => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    // Leftover per-file databases of this run, then the template.
    const { rows } = await c.query(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`herald_t_${process.pid}_%`]);
    for (const r of rows) await c.query(`DROP DATABASE IF EXISTS ${r.datname} WITH (FORCE)`).catch(() => {});
    await c.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await c.end();
    await embedded?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  };
}
