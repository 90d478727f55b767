// Rolls queue history up to the newest event. The rollup reads only below the cluster-wide
// transaction horizon, so while other test files run, recent events may wait for a later call.
import type pg from 'pg';
import type { Queue } from '../../queue/queue.ts';

export async function rollupAll(queue: Queue, pool: pg.Pool): Promise<void> {
  for (;;) {
    await queue.rollupHistory();
    const { rows } = await pool.query(`
      SELECT (SELECT (tx, event_id) FROM herald.stats_cursor)
             >= (SELECT (tx, id) FROM herald.job_events ORDER BY tx DESC, id DESC LIMIT 1) AS done`);
    if (rows[0].done !== false) return; // null: no events at all
    await new Promise((r) => setTimeout(r, 20));
  }
}
