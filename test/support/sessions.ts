// Sessions of the test's own database, as pg_stat_activity lists them. The view is cluster-wide
// and other test files share the cluster, so every lookup is restricted to this database.
import type pg from 'pg';
import { waitFor } from './wait.ts';
import { createPool } from '../../queue/database.ts';
import { Queue } from '../../queue/queue.ts';

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

/**
 * A Queue of `url` on its own pool, its sessions named `name` in pg_stat_activity (so a test can
 * tell who waits for whom). The pool is ended by the returned `end`.
 */
export function namedQueueSessions(url: string): { session(name: string): Queue; end(): Promise<void> } {
  const pools: pg.Pool[] = [];
  return {
    session(name) {
      const pool = createPool(url, { max: 2, applicationName: name });
      pools.push(pool);
      return new Queue(pool);
    },
    end: async () => {
      await Promise.all(pools.splice(0).map((p) => p.end()));
    },
  };
}
