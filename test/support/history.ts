// Rolls queue history up to the newest event. The rollup reads only below the cluster-wide
// transaction horizon, so while other test files run, recent events may wait for a later call.
import type pg from 'pg';
import type { Queue } from '../../queue/queue.ts';
import { waitFor } from './wait.ts';

export async function rollupAll(queue: Queue, pool: pg.Pool): Promise<void> {
  await waitFor(async () => {
    await queue.rollupHistory();
    const { rows } = await pool.query(`
      SELECT (SELECT (tx, event_id) FROM herald.stats_cursor)
             >= (SELECT (tx, id) FROM herald.job_events ORDER BY tx DESC, id DESC LIMIT 1) AS done`);
    return rows[0].done !== false; // null: no events at all
  }, { what: 'the history rollup to reach the newest event', everyMs: 20 });
}
