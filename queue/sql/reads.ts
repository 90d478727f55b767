import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';
import { withWaitingFor } from './waiting.ts';
import type { QueueSettingsRow } from './settings.ts';

export const getJob = statement<[id: string], JobRow>('get', withWaitingFor(`rows AS (SELECT * FROM herald.jobs WHERE id = $1)`));

// Every queue that has jobs or settings, with its counts and settings.
export const queueCounts = statement<
  [queue: string | null],
  QueueSettingsRow & { queued: number; scheduled: number; running: number; succeeded: number; failed: number; cancelled: number; blocked: number }
>(
  'queue_counts',
  `
WITH counts AS (
  SELECT queue,
         count(*) FILTER (WHERE status = 'queued' AND available_at <= now())::int AS queued,
         count(*) FILTER (WHERE status = 'queued' AND available_at > now())::int AS scheduled,
         count(*) FILTER (WHERE status = 'running')::int AS running,
         count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE status = 'failed')::int AS failed,
         count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
         count(*) FILTER (WHERE status = 'blocked')::int AS blocked
  FROM herald.jobs
  GROUP BY queue
)
SELECT coalesce(c.queue, s.queue) AS queue,
       coalesce(c.queued, 0) AS queued, coalesce(c.scheduled, 0) AS scheduled, coalesce(c.running, 0) AS running,
       coalesce(c.succeeded, 0) AS succeeded, coalesce(c.failed, 0) AS failed, coalesce(c.cancelled, 0) AS cancelled,
       coalesce(c.blocked, 0) AS blocked,
       coalesce(s.paused, false) AS paused, s.concurrency, s.group_concurrency, s.rate_count, s.rate_period_ms, s.dead_letter,
       s.updated_at, s.updated_by
FROM counts c FULL JOIN herald.queues s ON s.queue = c.queue
WHERE $1::text IS NULL OR coalesce(c.queue, s.queue) = $1
ORDER BY 1`,
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
