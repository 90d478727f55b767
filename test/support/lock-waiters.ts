// Forcing an interleaving with held locks: a test holds a row in one session, starts a write in
// another, and continues once that write is waiting for the lock (never after a sleep).
import type pg from 'pg';
import { expect } from 'vitest';

/** Resolves once `n` sessions of the pool's database wait for a lock. */
export async function lockWaitersReach(pool: pg.Pool, n: number): Promise<void> {
  await expect
    .poll(async () => {
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0].n;
    }, { timeout: 30_000 })
    .toBe(n);
}
