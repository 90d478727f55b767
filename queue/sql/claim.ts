import { CLAIMED_PARSERS, CLAIMED_RETURNING, type ClaimedRow } from '../claimed.ts';
import type { JobRow } from './rows.ts';
import { leaseFromNow, statement } from './statement.ts';

// Both claims (this one and claim-limited.ts) share these pieces and their parameters:
// $2 capabilities, $3 most jobs, $4 worker, $5 owner lock, $6 lease ms, $7 kinds (NULL = any).

/** The parameters of both claims; $1 (`scope`) is the worker's queues here, the one queue there. */
export type ClaimParams<Scope> = [
  scope: Scope,
  capabilities: string[],
  limit: number,
  worker: string,
  ownerLock: number | null,
  leaseMs: number,
  kinds: string[] | null,
];

/** A job of alias `t` this worker may start now: queued, runnable, not expired, its kind and needs met. */
export const runnable = (t: string) => `${t}.status = 'queued'
    AND ${t}.available_at <= now()
    AND (${t}.requires = '{}' OR ${t}.requires <@ $2::text[])
    AND ($7::text[] IS NULL OR ${t}.kind = ANY($7::text[]))
    AND (${t}.expire_at IS NULL OR ${t}.expire_at > now())`;

/**
 * Starts the jobs of CTE `picked` for worker $4, returning `returning`. The start is stamped after
 * any lock the claim waited for.
 */
export const takePicked = (returning: string) => `UPDATE herald.jobs j
SET status = 'running',
    attempt = j.attempt + 1,
    locked_by = $4,
    owner_lock = $5,
    started_at = statement_timestamp(),
    lease_expires_at = ${leaseFromNow('$6', 'statement_timestamp()')},
    progress = NULL
WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING ${returning}`;

/**
 * A claim statement in both shapes: whole rows (Queue.claim, the API) and the worker's rows
 * (ClaimedJob: fewer columns, as arrays, timestamps unparsed).
 */
export function claimStatements<Params extends readonly unknown[]>(name: string, sql: (returning: string) => string) {
  return {
    rows: statement<Params, JobRow>(name, sql('j.*')),
    claimed: statement<Params, ClaimedRow>(`${name}_run`, sql(CLAIMED_RETURNING), { rowMode: 'array', parsers: CLAIMED_PARSERS }),
  };
}

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
// (`runnable` and takePicked above are written that way.)
//
// A claim for every queue ($1 NULL) leaves the dead-letter queues alone (the gate row's parked):
// they are parking lots, worked only by a worker that names them. The same locked read makes a
// PATCH that names a dead-letter queue wait for claims in flight.
// Queues that are paused or have a limit are left to claim-limited.ts. Their list is read from
// the gate row FOR SHARE: a locked read returns the newest committed version, and a settings
// change (which updates that row) waits for claims in flight. So once a PATCH has returned, no
// claim here can still act on the old settings. Queues without settings pay one row lock.
// The test is on (queue || ''), an expression, so that the planner does not apply the column's
// statistics: with a single queue in the table (ndistinct 1), "queue <> x" looks as if it
// matched no row, and the planner would sort every queued row instead of walking the index.
// Written as NOT (... = ANY), its default estimate keeps nearly every row.
// A job past its expireAt never starts, whether or not the expiry pass has reached it yet.
export const claimJobs = claimStatements<ClaimParams<string[] | null>>(
  'claim',
  (returning) => `
WITH gate AS MATERIALIZED (
  SELECT CASE WHEN $1::text[] IS NULL THEN held || parked ELSE held END AS held FROM herald.queue_gate WHERE id = 1 FOR SHARE
),
picked AS (
  SELECT id
  FROM herald.jobs
  WHERE ${runnable('jobs')}
    AND ($1::text[] IS NULL OR queue = ANY($1::text[]))
    AND NOT ((queue || '') = ANY((SELECT held FROM gate)::text[]))
  ORDER BY priority DESC NULLS LAST, available_at, created_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
)
${takePicked(returning)}`,
);

// When the next scheduled job of these queues becomes runnable, so an idle worker sleeps until then.
// In epoch ms rounded UP: a timer set to a rounded-down time would fire a moment early, find the
// job not yet runnable, and then no longer see it as scheduled either. $4 reaches back that many ms:
// a job that became runnable after the claim before this looked, but before this statement, is
// still reported (its time is past, so the worker claims again at once). Without it, a timer that
// fires a moment early (a busy event loop) left that job to the next poll.
export const nextRunAt = statement<
  [queues: string[] | null, capabilities: string[], kinds: string[] | null, sinceMs: number],
  { at_ms: number | null }
>(
  'next_run_at',
  `
SELECT ceil(extract(epoch FROM min(available_at)) * 1000)::float8 AS at_ms
FROM herald.jobs
WHERE status = 'queued' AND available_at > now() - make_interval(secs => $4::float8 / 1000)
  AND ($1::text[] IS NULL OR queue = ANY($1::text[]))
  AND ($1::text[] IS NOT NULL OR NOT (queue = ANY((SELECT parked FROM herald.queue_gate WHERE id = 1)::text[])))
  AND (requires = '{}' OR requires <@ $2::text[])
  AND ($3::text[] IS NULL OR kind = ANY($3::text[]))`,
);
