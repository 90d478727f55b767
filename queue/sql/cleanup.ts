import { statement } from './statement.ts';

// Retention: finished jobs older than $1 ms go, and so do the events of jobs a bulk delete removed
// that long ago; at most $2 jobs of each per call, so a big backlog is deleted in short
// transactions that never block the queue for long. Their events are deleted row by row only in
// job_events_default (overflow), the kept partitions and the staging (what partition drops kept);
// the rest go with their partition
// (dropEventPartition). The highest (tx, id) it removes moves the retention horizon up: a stream
// resumed from below it starts with a reset.
// A finished parent stays while a child of it has not ended: a waiting child would be cancelled
// ("parent was deleted"), and a `run` child would run without the parent's result.
// `jobs` counts the finished jobs deleted, `gone` the bulk-deleted jobs whose events went.
export const deleteFinishedJobs = statement<[olderThanMs: number, limit: number], { jobs: number; gone: number }>(
  'cleanup',
  `
WITH doomed AS (
  SELECT id FROM herald.jobs p
  WHERE status IN ('succeeded', 'failed', 'cancelled')
    AND finished_at < now() - make_interval(secs => $1::float8 / 1000)
    AND NOT (p.has_children AND EXISTS (
      SELECT 1 FROM herald.job_edges e JOIN herald.jobs c ON c.id = e.child
      WHERE e.parent = p.id AND c.status NOT IN ('succeeded', 'failed', 'cancelled')))
  ORDER BY finished_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
),
gone AS (
  SELECT job_id FROM herald.deleted_jobs
  WHERE deleted_at < now() - make_interval(secs => $1::float8 / 1000)
  ORDER BY deleted_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
),
events AS (
  DELETE FROM herald.job_events_default e
  WHERE e.job_id IN (SELECT id FROM doomed UNION ALL SELECT job_id FROM gone)
  RETURNING e.tx, e.id
),
-- What partition drops kept (job_events_kept_*, all below the horizon) and what the next one is
-- copying out of its partition (job_events_staging) go too; the horizon already covers both.
-- An array, so each partition is probed by its job_id index, never read whole for a hash join;
-- the partitions above the horizon are pruned when the statement runs.
kept AS (
  DELETE FROM herald.job_events e
  WHERE e.job_id = ANY (ARRAY(SELECT id FROM doomed UNION ALL SELECT job_id FROM gone))
    AND e.tx <= (SELECT h.tx FROM herald.retention_horizon h WHERE h.id = 1)
    AND e.tableoid <> 'herald.job_events_default'::regclass
),
staged AS (
  DELETE FROM herald.job_events_staging e
  WHERE e.job_id = ANY (ARRAY(SELECT id FROM doomed UNION ALL SELECT job_id FROM gone))
),
horizon AS (
  UPDATE herald.retention_horizon h SET tx = m.tx, event_id = m.id
  FROM (SELECT tx, id FROM events ORDER BY tx DESC, id DESC LIMIT 1) m
  WHERE h.id = 1 AND (m.tx, m.id) > (h.tx, h.event_id)
),
unmarked AS (
  DELETE FROM herald.deleted_jobs g USING gone WHERE g.job_id = gone.job_id RETURNING 1
),
deleted AS (
  DELETE FROM herald.jobs j USING doomed d WHERE j.id = d.id RETURNING 1
)
SELECT (SELECT count(*) FROM deleted)::int AS jobs, (SELECT count(*) FROM unmarked)::int AS gone`,
);

/** The retention horizon: the highest event position retention has removed ('0', '0' when none). */
export const readRetentionHorizon = statement<[], { tx: string; id: string }>(
  'retention_horizon',
  `SELECT tx::text AS tx, event_id::text AS id FROM herald.retention_horizon WHERE id = 1`,
);

// The event log's partitions (drizzle/0021_event_partitions.sql and 0025_event_drop_staged.sql
// have the functions and why).

/** Readies the staging of the oldest partition due for retention: it and where to copy after, or no row. */
export const stageEventPartition = statement<[olderThanMs: number, lockMs: number], { part: string; tx: string; id: string }>(
  'stage_event_partition',
  `SELECT s.part::text AS part, s.tx::text AS tx, s.id::text AS id
FROM herald.stage_event_partition(now() - make_interval(secs => $1::float8 / 1000), $2) s`,
);

/** Validates the default partition's constraint that the staging added (a scan; only DDL waits). */
export const stageValidate = statement<[lockMs: number], { ok: boolean }>('stage_validate', `SELECT herald.stage_validate($1) AS ok`);

/**
 * Copies the kept events among the next $4 of partition $1 after ($2, $3): the last position read,
 * no row at the end, a null position when busy or no longer staging that partition.
 */
export const stageKeptEvents = statement<[part: string, tx: string, id: string, limit: number, lockMs: number], { tx: string | null; id: string | null }>(
  'stage_kept_events',
  `SELECT s.tx::text AS tx, s.id::text AS id FROM herald.stage_kept_events($1, $2::xid8, $3::bigint, $4, $5) s`,
);

/** Drops staged partition $1 (its kept events stay): 1 dropped, 0 not due or not staged, -1 busy. */
export const swapEventPartition = statement<[part: string, olderThanMs: number, lockMs: number, small: number], { r: number }>(
  'swap_event_partition',
  `SELECT herald.swap_event_partition($1::regclass, now() - make_interval(secs => $2::float8 / 1000), $3, $4) AS r`,
);

/** Moves a kept partition of $2 events or fewer to the default partition: 1 done, 0 none, -1 busy. */
export const foldKeptPartition = statement<[lockMs: number, small: number], { r: number }>(
  'fold_kept_partition',
  `SELECT herald.fold_kept_partition($1, $2) AS r`,
);

/** Adds event partitions of $1 transaction ids until $2 past the next id: how many, or -1 when busy. */
export const addEventPartitions = statement<[width: string, lead: string, slack: string, lockMs: number], { r: number }>(
  'add_event_partitions',
  `SELECT herald.add_event_partitions($1::bigint, $2::bigint, $3::bigint, $4) AS r`,
);

/** The next transaction id to be assigned (none is taken to read it). */
export const nextXid = statement<[], { x: string }>('next_xid', `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x`);
