// Stopping a transaction inside its COMMIT, after Herald's commit-time wake-up step has run (the
// notifier taken or skipped, the barrier held): a deferred constraint trigger of the test's own,
// queued after Herald's, waits for an advisory lock the test holds. So a test can order two
// producers' commits exactly, with no sleep.
import type pg from 'pg';
import { pidOf } from './lock-waiters.ts';

/** Creates (once per test database) the table whose deferred trigger waits for the key of each row inserted. */
export async function installCommitHold(pool: pg.Pool): Promise<void> {
  await pool.query(`
    CREATE TABLE public.commit_hold (k bigint NOT NULL);
    CREATE OR REPLACE FUNCTION public.commit_hold_wait() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(NEW.k);
      RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER commit_hold AFTER INSERT ON public.commit_hold
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.commit_hold_wait()`);
}

export interface HeldCommit {
  /** The session stopped in its COMMIT (the waiter, for lockWaitersReach). */
  pid: number;
  /** Settles when the COMMIT returns (after release()). */
  committed: Promise<void>;
  /** Lets the COMMIT finish; resolves once it has. */
  release(): Promise<void>;
}

export interface OpenTransaction {
  /** Its session's backend pid, to name it in lockWaitersReach. */
  pid: number;
  /**
   * Starts the COMMIT, which stops after Herald's wake-up step until release(); `holder` is a
   * session of the test that holds `key` meanwhile. Wait for it to block with lockWaitersReach
   * (waiter: this transaction's pid, holder: `holder`'s).
   */
  commitHeld(holder: pg.ClientBase, key: number): Promise<HeldCommit>;
  rollback(): Promise<void>;
}

/** Runs `statements` in a transaction on a connection of `pool`, left open. */
export async function openTransaction(pool: pg.Pool, statements: string[]): Promise<OpenTransaction> {
  const c = await pool.connect();
  const end = async (sql: string) => {
    try {
      await c.query(sql);
    } finally {
      c.release();
    }
  };
  let pid: number;
  try {
    pid = await pidOf(c);
    await c.query('BEGIN');
    for (const s of statements) await c.query(s);
  } catch (err) {
    await end('ROLLBACK');
    throw err;
  }
  return {
    pid,
    async commitHeld(holder, key) {
      await holder.query('SELECT pg_advisory_lock($1)', [key]);
      await c.query('INSERT INTO public.commit_hold (k) VALUES ($1)', [key]);
      const committed = end('COMMIT');
      committed.catch(() => {}); // awaited through release()
      return {
        pid,
        committed,
        async release() {
          await holder.query('SELECT pg_advisory_unlock($1)', [key]);
          await committed;
        },
      };
    },
    rollback: () => end('ROLLBACK'),
  };
}
