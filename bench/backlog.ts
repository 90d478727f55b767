// A deep queue for the depth bench and the claim-plan test: `finished` jobs done long ago, each
// with its three events (enqueued, claimed, succeeded), then `queued` runnable no-op jobs. Written
// in SQL chunks so a million rows need neither a million round trips nor one huge statement.
import type pg from 'pg';

const CHUNK = 100_000;

/** Adds the backlog, then ANALYZEs both tables (statistics in place, as on a steady-state server). */
export async function seedBacklog(db: Pick<pg.Pool, 'query'>, counts: { queued: number; finished: number; kind?: string }): Promise<void> {
  const kind = counts.kind ?? 'noop';
  for (let done = 0; done < counts.finished; done += CHUNK) {
    const n = Math.min(CHUNK, counts.finished - done);
    // The insert trigger writes each row's 'enqueued' event; the other two follow.
    await db.query(
      `WITH made AS (
         INSERT INTO herald.jobs (kind, payload, status, attempt, created_at, available_at, started_at, finished_at, result)
         SELECT $2, '{}', 'succeeded', 1, now() - interval '1 hour', now() - interval '1 hour',
                now() - interval '1 hour', now() - interval '59 minutes', 'null'
         FROM generate_series(1, $1::int)
         RETURNING id, queue, kind)
       INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data)
       SELECT m.id, m.queue, m.kind, t.type::herald.event_type, t.status::herald.job_status, 1, 'seed', NULL
       FROM made m, (VALUES ('claimed', 'running'), ('succeeded', 'succeeded')) AS t(type, status)
       ORDER BY m.id`,
      [n, kind],
    );
  }
  for (let done = 0; done < counts.queued; done += CHUNK) {
    const n = Math.min(CHUNK, counts.queued - done);
    await db.query(`INSERT INTO herald.jobs (kind, payload) SELECT $2, '{}' FROM generate_series(1, $1::int)`, [n, kind]);
  }
  await db.query('ANALYZE herald.jobs');
  await db.query('ANALYZE herald.job_events');
}
