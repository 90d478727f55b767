// A PostgreSQL cluster a system test may restart: its own embedded one, or the DATABASE_URL
// server through pg_ctlcluster (which restarts that whole server: only for a machine of its own).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedPostgres } from '../../queue/embedded.ts';
import { withDatabase } from '../../queue/database.ts';

export interface Cluster {
  url: string;
  /** Stops the server (fast: every session is cut) and starts it again on the same port. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A cluster with a fresh database of this name. */
export async function ownCluster(database: string): Promise<Cluster> {
  const external = process.env.DATABASE_URL;
  if (external) {
    const admin = new pg.Client({ connectionString: external });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${database}`);
    const { rows: [{ major, port }] } = await admin.query<{ major: number; port: string }>(
      `SELECT current_setting('server_version_num')::int / 10000 AS major, current_setting('port') AS port`,
    );
    await admin.end();
    // The cluster that listens on the URL's port (not always "main": a machine may run several).
    const name = execFileSync('pg_lsclusters', ['--no-header'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .find(([ver, , p]) => ver === String(major) && p === port)?.[1];
    if (!name) throw new Error(`no PostgreSQL ${major} cluster on port ${port} in pg_lsclusters`);
    return {
      url: withDatabase(external, database),
      async restart() {
        execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', String(major), name, 'restart', '-m', 'fast']);
      },
      async close() {
        const c = new pg.Client({ connectionString: external });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${database.replace(/_/g, '-')}-`));
  fs.chmodSync(dir, 0o755);
  let pgInstance: EmbeddedPostgres = await startEmbedded(dir, { database });
  const port = pgInstance.port;
  return {
    url: pgInstance.url,
    async restart() {
      await pgInstance.stop();
      pgInstance = await startEmbedded(dir, { database, port });
    },
    async close() {
      await pgInstance.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
