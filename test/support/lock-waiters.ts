// Forcing an interleaving with held locks: a test holds a lock in one session, starts a write in
// another, and continues once that write is waiting for the holder (never after a sleep). Who
// waits for whom comes from pg_blocking_pids: a count of any lock waiters would also pass when
// the write waits for something else, or when another session is the one waiting.
import type pg from 'pg';
import { waitFor } from './wait.ts';

/** Sessions of the test's database: one by its pid, or all those with that application_name. */
type Sessions = number | { app: string };

export interface LockWait {
  waiter: Sessions;
  holder: Sessions;
  /** How many sessions matching `waiter` must be held back by `holder` (exactly); 1 unless told. */
  count?: number;
}

/** A session's pid (pg.Client knows it as processID, but its types do not say so). */
export async function pidOf(client: pg.ClientBase): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
}

interface Session {
  pid: number;
  app: string;
  /** The sessions this one waits for a lock of (pg_blocking_pids). */
  blockedBy: number[];
}

const matches = (s: Session, who: Sessions) => (typeof who === 'number' ? s.pid === who : s.app === who.app);
const describe = (who: Sessions) => (typeof who === 'number' ? `pid ${who}` : `application ${who.app}`);

/** Reads the lock waits of the test's database; `ok` when every wait holds (see lockWaitersReach). */
async function readWaits(pool: pg.Pool, waits: LockWait[]): Promise<{ ok: boolean; graph: Session[] }> {
  const { rows } = await pool.query<{ pid: number; app: string; blocked_by: number[] }>(
    `SELECT pid, application_name AS app,
            CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) ELSE '{}' END AS blocked_by
     FROM pg_stat_activity WHERE datname = current_database()`,
  );
  const graph = rows.map((r) => ({ pid: r.pid, app: r.app, blockedBy: r.blocked_by }));
  const heldBack = (waiter: Session, holder: Sessions): boolean => {
    const seen = new Set<number>();
    const stack = [...waiter.blockedBy];
    while (stack.length) {
      const pid = stack.pop();
      const s = graph.find((g) => g.pid === pid);
      if (!s || seen.has(s.pid)) continue;
      seen.add(s.pid);
      if (matches(s, holder)) return true;
      if (waits.some((w) => matches(s, w.waiter))) stack.push(...s.blockedBy);
    }
    return false;
  };
  const ok = waits.every((w) => graph.filter((s) => matches(s, w.waiter) && heldBack(s, w.holder)).length === (w.count ?? 1));
  return { ok, graph };
}

/** Whether every wait holds right now (for a test that must tell it from something else ending first). */
export async function lockWaitsHold(pool: pg.Pool, ...waits: LockWait[]): Promise<boolean> {
  return (await readWaits(pool, waits)).ok;
}

/**
 * Resolves once every wait holds at the same time: exactly `count` sessions matching `waiter`
 * wait for a lock that a session matching `holder` holds, directly or queued behind another
 * waiter named in the same call (two writers of one locked row: the second waits for the first
 * one's tuple lock). A wait through any other session does not count.
 */
export async function lockWaitersReach(pool: pg.Pool, ...waits: LockWait[]): Promise<void> {
  let graph: Session[] = [];
  const what = waits.map((w) => `${w.count ?? 1} of ${describe(w.waiter)} waiting for ${describe(w.holder)}`).join(', ');
  try {
    await waitFor(
      async () => {
        const read = await readWaits(pool, waits);
        graph = read.graph;
        return read.ok;
      },
      { what, timeoutMs: 30_000 },
    );
  } catch (err) {
    const waiting = graph.filter((s) => s.blockedBy.length).map((s) => `${s.pid} (${s.app}) waits for ${s.blockedBy.join(', ')}`);
    throw new Error(`${(err as Error).message}; lock waits now: ${waiting.join('; ') || 'none'}`, { cause: err });
  }
}
