import type { JobRow } from './rows.ts';
import { leaseFromNow, statement } from './statement.ts';

// THE claim: up to $3 runnable jobs in priority order, skipping rows other workers hold,
// restricted to the worker's queues ($1, NULL = all), to the kinds it has tasks for ($7,
// NULL = any) and to jobs whose `requires` tags are a subset of its capabilities ($2).
// One statement, one round trip, one trigger call.
//
// The plan must walk jobs_claim_order and stop after $3 rows, at every depth. The planner has no
// statistics for `requires <@ $param` and guesses 0.5% of rows: with a small backlog it then
// expects fewer matches than the LIMIT and sorts the whole queue instead. `requires = '{}'` is
// estimated from the column's most common values (most jobs require nothing), so the OR below is
// estimated right and the index walk wins; it also spares the containment test for those rows.
// The picked rows are then updated by primary key (`id = ANY(ARRAY(...))`): joined to `picked`
// instead, the planner estimates 500 index lookups dearer than reading the whole table, and
// hashed a sequential scan of every row (8 of 23 ms at 30k rows, growing with the table).
export const claimJobs = statement<
  [
    queues: string[] | null,
    capabilities: string[],
    limit: number,
    worker: string,
    ownerLock: number | null,
    leaseMs: number,
    kinds: string[] | null,
  ],
  JobRow
>(
  'claim',
  `
WITH picked AS (
  SELECT id
  FROM herald.jobs
  WHERE status = 'queued'
    AND available_at <= now()
    AND ($1::text[] IS NULL OR queue = ANY($1::text[]))
    AND (requires = '{}' OR requires <@ $2::text[])
    AND ($7::text[] IS NULL OR kind = ANY($7::text[]))
  ORDER BY priority DESC NULLS LAST, available_at, created_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
)
UPDATE herald.jobs j
SET status = 'running',
    attempt = j.attempt + 1,
    locked_by = $4,
    owner_lock = $5,
    started_at = now(),
    lease_expires_at = ${leaseFromNow('$6')},
    progress = NULL
WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING j.*`,
);

// When the next scheduled job of these queues becomes runnable, so an idle worker sleeps until then.
// In epoch ms rounded UP: a timer set to a rounded-down time would fire a moment early, find the
// job not yet runnable, and then no longer see it as scheduled either.
export const nextRunAt = statement<[queues: string[] | null, capabilities: string[], kinds: string[] | null], { at_ms: number | null }>(
  'next_run_at',
  `
SELECT ceil(extract(epoch FROM min(available_at)) * 1000)::float8 AS at_ms
FROM herald.jobs
WHERE status = 'queued' AND available_at > now()
  AND ($1::text[] IS NULL OR queue = ANY($1::text[]))
  AND (requires = '{}' OR requires <@ $2::text[])
  AND ($3::text[] IS NULL OR kind = ANY($3::text[]))`,
);
