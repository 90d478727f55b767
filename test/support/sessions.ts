// Sessions of the test's own database, as pg_stat_activity lists them. The view is cluster-wide
// and other test files share the cluster, so every lookup is restricted to this database.
import type pg from 'pg';
import { waitFor } from './wait.ts';

/** The pid of this database's session with that application name, or null. */
export async function sessionPid(pool: pg.Pool, applicationName: string): Promise<number | null> {
  const { rows } = await pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
    [applicationName],
  );
  return rows[0]?.pid ?? null;
}

/** Ends a session (pg_terminate_backend) and waits until it is gone, so nothing it does comes after. */
export async function terminateSession(pool: pg.Pool, pid: number): Promise<void> {
  await pool.query('SELECT pg_terminate_backend($1)', [pid]);
  await waitFor(
    async () => !(await pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND datname = current_database()`, [pid])).rowCount,
    { what: `session ${pid} to end` },
  );
}
