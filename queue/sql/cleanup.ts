import { statement } from './statement.ts';

// Retention: finished jobs older than $1 ms go, and so do the events of jobs a bulk delete removed
// that long ago; at most $2 jobs of each per call, so a big backlog is deleted in short
// transactions that never block the queue for long. Their events are deleted row by row only in
// job_events_default (overflow, and what a partition drop kept); the rest go with their partition
// (dropEventPartition). The highest (tx, id) it removes moves the retention horizon up: a stream
// resumed from below it starts with a reset.
// `jobs` counts the finished jobs deleted, `gone` the bulk-deleted jobs whose events went.
export const deleteFinishedJobs = statement<[olderThanMs: number, limit: number], { jobs: number; gone: number }>(
  'cleanup',
  `
WITH doomed AS (
  SELECT id FROM herald.jobs
  WHERE status IN ('succeeded', 'failed', 'cancelled')
    AND finished_at < now() - make_interval(secs => $1::float8 / 1000)
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

// The event log's partitions (drizzle/0021_event_partitions.sql has the functions and why).

/** Drops the oldest event partition due for retention: 1 dropped, 0 none due, -1 busy (retry later). */
export const dropEventPartition = statement<[olderThanMs: number, lockMs: number], { r: number }>(
  'drop_event_partition',
  `SELECT herald.drop_event_partition(now() - make_interval(secs => $1::float8 / 1000), $2) AS r`,
);

/** Adds event partitions of $1 transaction ids until $2 past the next id: how many, or -1 when busy. */
export const addEventPartitions = statement<[width: string, lead: string, slack: string, lockMs: number], { r: number }>(
  'add_event_partitions',
  `SELECT herald.add_event_partitions($1::bigint, $2::bigint, $3::bigint, $4) AS r`,
);

/** The next transaction id to be assigned (none is taken to read it). */
export const nextXid = statement<[], { x: string }>('next_xid', `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x`);
