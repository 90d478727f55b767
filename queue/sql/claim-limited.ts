import { statement } from './statement.ts';
import { claimStatements, runnable, takePicked, type ClaimParams } from './claim.ts';

// The claim of ONE queue that has settings (paused, concurrency, groupConcurrency, rateLimit).
// Such claims take turns: the caller's transaction first locks the queue's settings row
// (lockQueueSettings), then runs claimLimited as a second statement, whose fresh snapshot sees
// every claim that held the lock before. Two claimers can therefore never both take the last
// slots. statement_timestamp() is after the lock, so the start times recorded for the rate
// window rise from one claim to the next, and every window of periodMs is checked at its end.
// Queues without settings never come here (the plain claim in claim.ts).
export const lockQueueSettings = statement<[queue: string], { queue: string }>(
  'lock_queue_settings',
  `SELECT queue FROM herald.queues WHERE queue = $1 FOR UPDATE`,
);

export const claimLimited = claimStatements<ClaimParams<string>>(
  'claim_limited',
  (returning) => `
WITH s AS (
  SELECT * FROM herald.queues WHERE queue = $1 AND NOT paused
),
running AS (
  SELECT "group", count(*)::int AS n
  FROM herald.jobs
  WHERE status = 'running' AND queue = $1
  GROUP BY "group"
),
window_starts AS (
  SELECT count(*)::int AS n
  FROM herald.queue_starts q, s
  WHERE s.rate_count IS NOT NULL AND q.queue = $1
    AND q.at > statement_timestamp() - make_interval(secs => s.rate_period_ms::float8 / 1000)
),
budget AS (
  SELECT greatest(0, least(
           $3::int,
           s.concurrency - (SELECT coalesce(sum(n), 0) FROM running),
           s.rate_count - (SELECT n FROM window_starts)))::int AS n,
         s.group_concurrency
  FROM s
),
-- Groups already at their limit are skipped in the scan, so one busy group cannot hide the
-- jobs of others behind it. Each remaining group gets at most its free slots (ranked below);
-- the scan reads a few more rows than the budget so that a group's surplus leaves room.
candidates AS (
  SELECT j.id, j."group", j.priority, j.available_at, j.created_at
  FROM herald.jobs j, budget b
  WHERE ${runnable('j')}
    AND j.queue = $1
    AND (b.group_concurrency IS NULL OR j."group" IS NULL OR j."group" NOT IN (
          SELECT r."group" FROM running r WHERE r."group" IS NOT NULL AND r.n >= b.group_concurrency))
  ORDER BY j.priority DESC NULLS LAST, j.available_at, j.created_at, j.id
  LIMIT (SELECT CASE WHEN group_concurrency IS NULL THEN n ELSE n * 4 END FROM budget)
  FOR UPDATE OF j SKIP LOCKED
),
picked AS (
  SELECT c.id
  FROM (
    SELECT c.*, row_number() OVER (PARTITION BY c."group"
                                   ORDER BY c.priority DESC, c.available_at, c.created_at, c.id) AS group_rank
    FROM candidates c
  ) c
  CROSS JOIN budget b
  LEFT JOIN running r ON r."group" = c."group"
  WHERE b.group_concurrency IS NULL OR c."group" IS NULL
     OR c.group_rank <= b.group_concurrency - coalesce(r.n, 0)
  ORDER BY c.priority DESC, c.available_at, c.created_at, c.id
  LIMIT (SELECT n FROM budget)
),
claimed AS (
${takePicked(returning)}
),
recorded AS (
  INSERT INTO herald.queue_starts (queue, at)
  SELECT $1, statement_timestamp() FROM claimed, s WHERE s.rate_count IS NOT NULL
)
SELECT * FROM claimed`,
);

/** When the rate window of a queue next lets a job start (epoch ms, rounded up), or null. */
export const rateFreeAt = statement<[queue: string], { at_ms: number | null }>(
  'rate_free_at',
  `
SELECT ceil(extract(epoch FROM min(q.at) + make_interval(secs => s.rate_period_ms::float8 / 1000)) * 1000)::float8 AS at_ms
FROM herald.queues s
JOIN herald.queue_starts q ON q.queue = s.queue
WHERE s.queue = $1 AND s.rate_count IS NOT NULL
  AND q.at > statement_timestamp() - make_interval(secs => s.rate_period_ms::float8 / 1000)
GROUP BY s.rate_count, s.rate_period_ms
HAVING count(*) >= s.rate_count`,
);
