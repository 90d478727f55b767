import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';

export const getJob = statement<[id: string], JobRow>('get', `SELECT * FROM herald.jobs WHERE id = $1`);

export const queueCounts = statement<
  [],
  { queue: string; queued: number; scheduled: number; running: number; succeeded: number; failed: number; cancelled: number }
>(
  'queue_counts',
  `
SELECT queue,
       count(*) FILTER (WHERE status = 'queued' AND available_at <= now())::int AS queued,
       count(*) FILTER (WHERE status = 'queued' AND available_at > now())::int AS scheduled,
       count(*) FILTER (WHERE status = 'running')::int AS running,
       count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
       count(*) FILTER (WHERE status = 'failed')::int AS failed,
       count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled
FROM herald.jobs
GROUP BY queue
ORDER BY queue`,
);

/** Who holds jobs now, and since when. */
export const runningByWorker = statement<[], { worker: string; running: number; since: Date; jobs: string[] }>(
  'workers',
  `
SELECT locked_by AS worker, count(*)::int AS running, min(started_at) AS since,
       array_agg(id::text ORDER BY id) AS jobs
FROM herald.jobs
WHERE status = 'running'
GROUP BY locked_by
ORDER BY locked_by`,
);

/** Bloat watch: dead tuples and vacuum times of the two tables. */
export const tableStats = statement<
  [],
  { name: string; live_tuples: number; dead_tuples: number; last_autovacuum: Date | null; last_vacuum: Date | null }
>(
  'table_stats',
  `
SELECT relname AS name, n_live_tup::bigint::float8 AS live_tuples, n_dead_tup::bigint::float8 AS dead_tuples,
       last_autovacuum, last_vacuum
FROM pg_stat_user_tables
WHERE schemaname = 'herald' AND relname IN ('jobs', 'job_events')
ORDER BY relname`,
);
