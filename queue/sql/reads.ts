import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';
import { withWaitingFor } from './waiting.ts';
import type { QueueSettingsRow } from './settings.ts';

export const getJob = statement<[id: string], JobRow>('get', withWaitingFor(`rows AS (SELECT * FROM herald.jobs WHERE id = $1)`));

// Every queue that has jobs or settings, with its counts and settings. The counts are sums of
// herald.job_counts (never a count of jobs): a queued job is scheduled when its runAt is still
// ahead: every job of a later minute than the current one, plus those of the current minute still
// ahead of now() (an index range of at most a minute's scheduled jobs, only where there are any).
export const queueCounts = statement<
  [queue: string | null],
  QueueSettingsRow & { queued: number; scheduled: number; running: number; succeeded: number; failed: number; cancelled: number; blocked: number }
>(
  'queue_counts',
  `
WITH cur AS (SELECT herald.job_count_minute('queued', now()) AS minute),
sums AS (
  SELECT k.queue, k.status, CASE WHEN k.minute > cur.minute THEN 1 WHEN k.minute = cur.minute THEN 0 ELSE -1 END AS bin, sum(k.n) AS n
  FROM herald.job_counts k CROSS JOIN cur
  WHERE $1::text IS NULL OR k.queue = $1
  GROUP BY 1, 2, 3
),
counts AS (
  SELECT queue,
         coalesce(sum(n) FILTER (WHERE status = 'queued'), 0)::int AS queued_all,
         coalesce(sum(n) FILTER (WHERE status = 'queued' AND bin > 0), 0)::int AS later,
         coalesce(sum(n) FILTER (WHERE status = 'queued' AND bin = 0), 0)::int AS this_minute,
         coalesce(sum(n) FILTER (WHERE status = 'running'), 0)::int AS running,
         coalesce(sum(n) FILTER (WHERE status = 'succeeded'), 0)::int AS succeeded,
         coalesce(sum(n) FILTER (WHERE status = 'failed'), 0)::int AS failed,
         coalesce(sum(n) FILTER (WHERE status = 'cancelled'), 0)::int AS cancelled,
         coalesce(sum(n) FILTER (WHERE status = 'blocked'), 0)::int AS blocked
  FROM sums
  GROUP BY queue
  HAVING sum(n) > 0
),
split AS (
  SELECT c.*, c.later + CASE WHEN c.this_minute > 0 THEN (
           SELECT count(*)::int FROM herald.jobs j
           WHERE j.status = 'queued' AND j.queue = c.queue AND j.available_at > now() AND j.available_at < cur.minute + interval '1 minute')
         ELSE 0 END AS scheduled
  FROM counts c CROSS JOIN cur
)
SELECT coalesce(c.queue, s.queue) AS queue,
       coalesce(c.queued_all - c.scheduled, 0) AS queued, coalesce(c.scheduled, 0) AS scheduled, coalesce(c.running, 0) AS running,
       coalesce(c.succeeded, 0) AS succeeded, coalesce(c.failed, 0) AS failed, coalesce(c.cancelled, 0) AS cancelled,
       coalesce(c.blocked, 0) AS blocked,
       coalesce(s.paused, false) AS paused, s.concurrency, s.group_concurrency, s.rate_count, s.rate_period_ms, s.dead_letter,
       s.updated_at, s.updated_by
FROM split c FULL JOIN herald.queues s ON s.queue = c.queue
WHERE $1::text IS NULL OR coalesce(c.queue, s.queue) = $1
ORDER BY 1`,
);

/** Bloat watch: dead tuples and vacuum times of the two tables (the event log's summed over its partitions). */
export const tableStats = statement<
  [],
  { name: string; live_tuples: number; dead_tuples: number; last_autovacuum: Date | null; last_vacuum: Date | null }
>(
  'table_stats',
  `
SELECT 'jobs' AS name, n_live_tup::bigint::float8 AS live_tuples, n_dead_tup::bigint::float8 AS dead_tuples,
       last_autovacuum, last_vacuum
FROM pg_stat_user_tables
WHERE relid = 'herald.jobs'::regclass
UNION ALL
SELECT 'job_events', sum(s.n_live_tup)::float8, sum(s.n_dead_tup)::float8, max(s.last_autovacuum), max(s.last_vacuum)
FROM pg_partition_tree('herald.job_events') t
JOIN pg_stat_user_tables s ON s.relid = t.relid
WHERE t.isleaf
ORDER BY name`,
);
