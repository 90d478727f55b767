import { WORKER_SEEN_LATELY, workerRuns } from './live.ts';

/** Why a queued job is held back (the Job JSON's waitingFor), as WAITING_FOR below says. */
export const WAITING_REASONS = [
  'dependencies', 'scheduled', 'paused', 'concurrency', 'group_concurrency', 'rate_limit', 'no_worker',
  // A durable handler's run ended to sleep, to wait for a signal, or for a job it invoked: the
  // 'scheduled' of a job whose jobs.wait says why (toJob; the SQL here never names that column, so
  // it runs on a database migrated before it existed).
  'sleep', 'signal', 'child',
] as const;
export type WaitingFor = (typeof WAITING_REASONS)[number];

// Why a queued job is held back, as the Job JSON's waitingFor: the first reason that applies,
// or NULL when the job is not queued or nothing holds it back (it starts when a slot frees).
// Every statement that returns jobs to the API wraps its rows with this, so a read, an enqueue
// and a retry all say the same thing. Workers count when their registry row is fresh: the
// workers' maintenance deletes the row of one whose liveness lock vanished within about a
// second, so this need not read pg_locks (it runs in every enqueue).
//
// The limits' counts are taken once per queue (and per group) among the returned rows, in the
// CTEs of withWaitingFor, never once per row: a batch of 1,000 jobs into a queue with 100,000
// starts in its window counts that window once. Each count runs only if the queue has the limit.
const WAITING_FOR = `
CASE
  WHEN j.status = 'blocked' THEN 'dependencies'
  WHEN j.status <> 'queued' THEN NULL
  WHEN j.available_at > now() THEN 'scheduled'
  WHEN s.paused THEN 'paused'
  WHEN NOT EXISTS (SELECT 1 FROM live_workers w WHERE ${workerRuns('j')}) THEN 'no_worker'
  WHEN s.concurrency <= s.running THEN 'concurrency'
  WHEN s.group_concurrency <= g.running THEN 'group_concurrency'
  WHEN s.rate_count <= s.started THEN 'rate_limit'
END`;

// The settings of the queues among the rows that wait now, with the counts their limits need.
const LIMITS = `
waiting_rows AS MATERIALIZED (SELECT DISTINCT queue, "group" FROM rows WHERE status = 'queued' AND available_at <= now()),
limits AS MATERIALIZED (
  SELECT s.queue, s.paused, s.concurrency, s.group_concurrency, s.rate_count,
         CASE WHEN s.concurrency IS NOT NULL AND NOT s.paused THEN
           (SELECT count(*) FROM herald.jobs r WHERE r.status = 'running' AND r.queue = s.queue) END AS running,
         CASE WHEN s.rate_count IS NOT NULL AND NOT s.paused THEN
           (SELECT count(*) FROM herald.queue_starts q
            WHERE q.queue = s.queue AND q.at > now() - make_interval(secs => s.rate_period_ms::float8 / 1000)) END AS started
  FROM herald.queues s
  WHERE s.queue IN (SELECT queue FROM waiting_rows)
),
group_running AS MATERIALIZED (
  SELECT w.queue, w."group",
         (SELECT count(*) FROM herald.jobs r WHERE r.status = 'running' AND r.queue = w.queue AND r."group" = w."group") AS running
  FROM waiting_rows w JOIN limits s ON s.queue = w.queue
  WHERE w."group" IS NOT NULL AND s.group_concurrency IS NOT NULL AND NOT s.paused
)`;
// The parents of a job, in dependsOn order; read only for jobs that have some.
const DEPENDS_ON = `CASE WHEN j.on_parent_failure IS NULL THEN '{}'::text[]
  ELSE ARRAY(SELECT e.parent::text FROM herald.job_edges e WHERE e.child = j.id ORDER BY e.pos) END`;

/**
 * A statement returning the job rows of CTE `rows` (defined by `ctes`, which may modify data)
 * with a `waiting_for` column, in `order`.
 */
export const withWaitingFor = (ctes: string, order = 'j.id') => `
WITH ${ctes},
live_workers AS MATERIALIZED (SELECT w.* FROM herald.workers w WHERE ${WORKER_SEEN_LATELY}),
${LIMITS}
SELECT j.*, ${WAITING_FOR} AS waiting_for, ${DEPENDS_ON} AS depends_on
FROM rows j
LEFT JOIN limits s ON s.queue = j.queue
LEFT JOIN group_running g ON g.queue = j.queue AND g."group" = j."group"
ORDER BY ${order}`;
