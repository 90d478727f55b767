// A primary and a real streaming standby, both embedded PostgreSQL (the package's own binaries, so
// nothing to install): the primary is made and migrated, stopped cleanly, and its data directory
// copied cold (no pg_basebackup). The copy, with standby.signal and primary_conninfo, replays the
// primary's WAL as a hot standby. One pair per test file, started once (it takes seconds).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, startEmbedded, type EmbeddedPostgres } from '../../queue/embedded.ts';
import { migrate } from '../../queue/migrate.ts';
import { waitFor } from './wait.ts';

export interface StandbyPair {
  /** The primary's herald database. */
  primaryUrl: string;
  /** The standby's herald database (read-only). */
  standbyUrl: string;
  /** Stops the standby (fast shutdown: its sessions end). */
  stopStandby(): Promise<void>;
  /** Starts the stopped standby again on its port, and waits until it streams. */
  startStandby(): Promise<void>;
  /** Waits until the standby has replayed everything the primary wrote so far. */
  caughtUp(): Promise<void>;
  /** Stops both and removes their directories. */
  stop(): Promise<void>;
}

const DATABASE = 'herald';
// Replication needs wal_level replica and WAL senders (both defaults, said here so a changed
// default cannot break the pair); hot_standby lets the copy answer queries.
const PRIMARY_SETTINGS = { wal_level: 'replica', max_wal_senders: '4', max_prepared_transactions: '10' };
const STANDBY_SETTINGS = { hot_standby: 'on', max_prepared_transactions: '10' };

export async function startStandbyPair(): Promise<StandbyPair> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-standby-'));
  fs.chmodSync(root, 0o755);
  const primaryDir = path.join(root, 'primary');
  const standbyDir = path.join(root, 'standby');
  const primaryPort = await freePort();
  let primary: EmbeddedPostgres | undefined = await startEmbedded(primaryDir, { database: DATABASE, port: primaryPort, settings: PRIMARY_SETTINGS });
  let standby: EmbeddedPostgres | undefined;
  const standbyPort = await freePort();
  const startStandby = async () => {
    standby = await startEmbedded(standbyDir, { database: DATABASE, port: standbyPort, settings: STANDBY_SETTINGS });
    await waitFor(() => streaming(primary!.url), { what: 'the standby streams from the primary' });
  };
  try {
    await migrate(primary.url);
    await primary.stop();
    primary = undefined;
    // cp -a keeps the files' owner (the 'postgres' user when the tests run as root).
    fs.mkdirSync(standbyDir);
    execFileSync('cp', ['-a', path.join(primaryDir, 'pgdata'), path.join(standbyDir, 'pgdata')]);
    const pgdata = path.join(standbyDir, 'pgdata');
    fs.rmSync(path.join(pgdata, 'postgres.log'), { force: true });
    fs.writeFileSync(path.join(pgdata, 'standby.signal'), '');
    fs.appendFileSync(
      path.join(pgdata, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=herald_standby'\n`,
    );
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', path.join(pgdata, 'standby.signal'), path.join(pgdata, 'postgresql.auto.conf')]);
    primary = await startEmbedded(primaryDir, { database: DATABASE, port: primaryPort, settings: PRIMARY_SETTINGS });
    await startStandby();
  } catch (err) {
    await standby?.stop().catch(() => {});
    await primary?.stop().catch(() => {});
    fs.rmSync(root, { recursive: true, force: true });
    throw err;
  }
  const primaryUrl = primary.url;
  return {
    primaryUrl,
    standbyUrl: `postgres://postgres@127.0.0.1:${standbyPort}/${DATABASE}`,
    async stopStandby() {
      await standby?.stop();
      standby = undefined;
    },
    startStandby,
    async caughtUp() {
      const lsn = await one<string>(primaryUrl, 'SELECT pg_current_wal_insert_lsn()::text AS v');
      await waitFor(
        async () => one<boolean>(`postgres://postgres@127.0.0.1:${standbyPort}/${DATABASE}`, `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS v`),
        { what: 'the standby replayed the primary' },
      );
    },
    async stop() {
      await standby?.stop().catch(() => {});
      await primary?.stop().catch(() => {});
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

async function one<T>(url: string, sql: string): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ v: T }>(sql)).rows[0].v;
  } finally {
    await c.end();
  }
}

const streaming = (primaryUrl: string) =>
  one<boolean>(primaryUrl, `SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = 'herald_standby' AND state = 'streaming') AS v`);
