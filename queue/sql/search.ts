// The job filter that GET /api/jobs and the bulk actions share: one predicate, so a bulk
// action touches exactly the jobs the same filter lists. Its parameters come first (see
// filterValues in queue/search.ts); each statement numbers its own after them with `p(n)`.
//
// These statements are never prepared: a prepared statement may switch to a generic plan, and
// a generic plan of "$1 IS NULL OR queue = $1" cannot use the queue index. Planning each call
// costs well under a millisecond; a wrong plan costs a table scan.
import type { BulkAction } from '../defaults.ts';
import type { JobStatus } from '../schema/index.ts';
import { CANCEL, DELETE, RETRY, RUN_NOW } from './admin.ts';
import { REDRIVE, redrivable } from './dead-letter.ts';
import type { JobRow } from './rows.ts';
import { withWaitingFor } from './waiting.ts';
import { statement } from './statement.ts';

const JOB_FILTER = `
      ($1::text IS NULL OR j.queue = $1)
  AND ($2::herald.job_status IS NULL OR j.status = $2)
  AND (NOT $11::boolean OR j.available_at > now())
  AND ($3::text IS NULL OR j.kind = $3)
  AND ($4::jsonb IS NULL OR j.payload @> $4)
  AND ($5::text IS NULL OR j.last_error->>'message' ILIKE $5)
  AND ($6::timestamptz IS NULL OR j.created_at >= $6)
  AND ($7::timestamptz IS NULL OR j.created_at <= $7)
  AND ($8::text IS NULL OR j."group" = $8)
  AND ($9::text IS NULL OR j.tags @> ARRAY[$9::text])
  AND ($10::bigint IS NULL OR j.flow_id = $10)
  AND ($12::text IS NULL OR (j.wait IS NOT NULL AND j.wait->>'type' = $12 AND j.available_at > now()))`;

/** The filter's parameters, in JOB_FILTER's order: payload as JSON text, error as an ILIKE pattern, times as ISO. */
export type FilterParams = [
  queue: string | null,
  /**
   * A job status ('queued' for scheduled). Typed as the enum, so the planner sees the value
   * itself: its statistics, and the partial indexes whose predicate it implies.
   */
  status: JobStatus | null,
  kind: string | null,
  payloadJson: string | null,
  errorPattern: string | null,
  createdAfter: string | null,
  createdBefore: string | null,
  group: string | null,
  tag: string | null,
  flow: string | null,
  /** Only queued jobs whose runAt is still ahead (what GET /api/queues counts as scheduled). */
  scheduled: boolean,
  /** Only jobs whose durable handler waits so (jobs.wait.type) until its runAt, still ahead (waitingFor). */
  waitingFor: string | null,
];
const FILTER_PARAMS = 12;
const p = (n: number) => `$${FILTER_PARAMS + n}`;

const unprepared = { prepare: false } as const;

/**
 * A page, newest first: ids below p(1) (the cursor) and, for a bounded search, at or above
 * p(3) (the oldest id of its window); p(2) rows.
 */
export const listJobs = statement<[...FilterParams, before: string | null, limit: number, floor: string | null], JobRow>(
  'list',
  withWaitingFor(
    `rows AS (
SELECT j.* FROM herald.jobs j
WHERE ${JOB_FILTER}
  AND (${p(1)}::bigint IS NULL OR j.id < ${p(1)})
  AND (${p(3)}::bigint IS NULL OR j.id >= ${p(3)})
ORDER BY j.id DESC
LIMIT ${p(2)})`,
    'j.id DESC',
  ),
  unprepared,
);

/**
 * The oldest id of a search window: the $2-th newest job below $1, or no row when fewer are
 * left. An index-only walk down the primary key. The window is the newest jobs of the whole
 * table, not of one queue: ids follow the table's physical order, so a page of a search reads a
 * bounded run of consecutive heap pages whatever its filters (a queue's own newest 100,000 jobs
 * can be spread over every page of the table).
 */
export const windowFloor = statement<[before: string | null, window: number], { id: string }>(
  'window_floor',
  `
SELECT id FROM herald.jobs
WHERE ($1::bigint IS NULL OR id < $1)
ORDER BY id DESC
OFFSET $2::int - 1
LIMIT 1`,
  unprepared,
);


// A bulk action works through the matches newest first, p(2) at a time, below the cursor p(1);
// each call is its own short transaction. `matched` counts the batch, `affected` the jobs the
// action changed: the eligible statuses are re-checked on the locked row, so a job that moved
// on meanwhile is left alone. `last` is the next cursor.
const bulkBatch = (name: string, action: string) =>
  statement<[...FilterParams, before: string | null, batchSize: number], { matched: number; affected: number; last: string | null }>(
    name,
    `
WITH batch AS (
  SELECT j.id FROM herald.jobs j
  WHERE ${JOB_FILTER} AND (${p(1)}::bigint IS NULL OR j.id < ${p(1)})
  ORDER BY j.id DESC
  LIMIT ${p(2)}
),
acted AS (${action})
SELECT (SELECT count(*) FROM batch)::int AS matched,
       (SELECT count(*) FROM acted)::int AS affected,
       (SELECT min(id) FROM batch)::text AS last`,
    unprepared,
  );

// Until server/schemas.ts and client/index.ts import them from queue/ (their branches of this wave own them).

/** One statement per bulk action (BULK_ACTIONS in queue/defaults.ts). */
export const bulkStatements = {
  retry: bulkBatch('bulk_retry', `UPDATE herald.jobs SET ${RETRY.set} FROM batch b WHERE herald.jobs.id = b.id AND ${RETRY.where} RETURNING 1`),
  cancel: bulkBatch('bulk_cancel', `UPDATE herald.jobs SET ${CANCEL.set} FROM batch b WHERE herald.jobs.id = b.id AND ${CANCEL.where} RETURNING 1`),
  // Each job leaves one 'deleted' event, so live views drop it; its other events go right after,
  // in the same transaction (purgeDeletedEvents). The 'deleted' events go with retention
  // (deleted_jobs says when).
  delete: bulkBatch(
    'bulk_delete',
    `
  DELETE FROM herald.jobs d USING batch b WHERE d.id = b.id AND d.status IN ${DELETE.statuses}
  RETURNING d.id, d.queue, d.kind, d.status, d.attempt
), deleted_events AS (
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt)
  SELECT id, queue, kind, 'deleted', status, attempt FROM acted
), marked AS (
  INSERT INTO herald.deleted_jobs (job_id) SELECT id FROM acted ON CONFLICT DO NOTHING`,
  ),
  redrive: bulkBatch('bulk_redrive', REDRIVE),
  run_now: bulkBatch('bulk_run_now', `UPDATE herald.jobs SET ${RUN_NOW.set} FROM batch b WHERE herald.jobs.id = b.id AND ${RUN_NOW.where} RETURNING 1`),
};

/**
 * A bulk action's dry run: the jobs the filter matches, and how many of them the action would
 * change now, by the same test the action applies to each locked row. One read, no lock.
 */
const dryRun = (name: string, eligible: string, join = '') =>
  statement<FilterParams, { matched: number; affected: number }>(
    name,
    `SELECT count(*)::int AS matched, (count(*) FILTER (WHERE ${eligible}))::int AS affected
FROM herald.jobs j ${join}
WHERE ${JOB_FILTER}`,
    unprepared,
  );

/** One dry run per bulk action. */
export const dryRunStatements: Record<BulkAction, ReturnType<typeof dryRun>> = {
  retry: dryRun('dry_run_retry', RETRY.where),
  cancel: dryRun('dry_run_cancel', CANCEL.where),
  delete: dryRun('dry_run_delete', `status IN ${DELETE.statuses}`),
  redrive: dryRun('dry_run_redrive', redrivable('j', 's'), 'LEFT JOIN herald.jobs s ON s.id = j.dead_letter_of'),
  run_now: dryRun('dry_run_run_now', RUN_NOW.where),
};

/**
 * Deletes the events of the jobs this transaction's bulk delete removed (their 'deleted' events
 * say which), but those: error and progress messages can hold what a job handled, and whoever
 * deletes a job to erase it must be able to rely on that. Wherever the events are: any partition,
 * and the staging that a partition drop copies kept events into. A statement of its own, after
 * the delete: a drop's copy that held a job's row (FOR KEY SHARE) made the delete wait, and only
 * a snapshot taken after that wait sees the copies it committed.
 */
export const purgeDeletedEvents = statement<[]>(
  'purge_deleted_events',
  `
WITH gone AS (
  SELECT ARRAY(SELECT job_id FROM herald.job_events WHERE tx = pg_current_xact_id_if_assigned() AND type = 'deleted') AS ids
), events AS (
  DELETE FROM herald.job_events e USING gone WHERE e.job_id = ANY (gone.ids) AND e.type <> 'deleted'
)
DELETE FROM herald.job_events_staging e USING gone WHERE e.job_id = ANY (gone.ids) AND e.type <> 'deleted'`,
);
