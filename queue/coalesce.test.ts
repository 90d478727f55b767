// The enqueue coalescer (services/produce.ts): with one statement in flight, a few calls wait for
// it and go together in the next; a backlog of PARALLEL_BATCH calls gets a statement of its own
// beside it. The first statement is held on a table lock its trigger needs, so every call below
// is made while it is in flight, whatever the machine's speed.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { lockWaitersReach, pidOf } from '../test/support/lock-waiters.ts';
import { PARALLEL_BATCH } from './services/produce.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events'] });

/** Enqueues one call whose statement then waits on a lock of herald.job_events, then `more` calls; returns how many events each transaction wrote, smallest first (two statements released together may number their events in either order). */
async function statementsFor(more: number): Promise<number[]> {
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE herald.job_events IN EXCLUSIVE MODE');
    const held = await pidOf(holder);
    const first = db.queue.enqueue({ kind: 'first' });
    await lockWaitersReach(db.pool, { waiter: { app: 'herald' }, holder: held });
    const rest = Array.from({ length: more }, (_, i) => db.queue.enqueue({ kind: 'rest', payload: { i } }));
    // A statement of their own, if the calls started one, waits on the lock too.
    const parallel = more >= PARALLEL_BATCH ? 1 : 0;
    await lockWaitersReach(db.pool, { waiter: { app: 'herald' }, holder: held, count: 1 + parallel });
    await holder.query('COMMIT');
    await Promise.all([first, ...rest]);
  } finally {
    await holder.end();
  }
  const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM herald.job_events GROUP BY tx');
  return rows.map((r) => r.n).sort((a, b) => a - b);
}

describe('the enqueue coalescer', () => {
  it('with a statement in flight, fewer than PARALLEL_BATCH calls wait for it and go together in one', async () => {
    // Every freed slot used to take the next call alone: here three of them would have gone one by one.
    expect(await statementsFor(PARALLEL_BATCH - 1)).toEqual([1, PARALLEL_BATCH - 1]);
  });

  it('a backlog of PARALLEL_BATCH calls starts a statement beside the one in flight; later ones wait', async () => {
    expect(await statementsFor(PARALLEL_BATCH + 3)).toEqual([1, 3, PARALLEL_BATCH]);
  });

  it('an idle coalescer sends a lone call at once', async () => {
    const { job } = await db.queue.enqueue({ kind: 'alone' });
    expect(job.status).toBe('queued');
  });
});
