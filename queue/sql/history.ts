// Queue history: per-minute rollups of the event feed into herald.queue_stats.
import { HISTORY_KEY, LOCK_NAMESPACE } from '../locks.ts';
import { statement } from './statement.ts';
import { freshHorizonCte } from './horizon.ts';

/** One rollup at a time, whatever the number of processes running it; false = another has it. */
export const lockHistory = statement<[], { locked: boolean }>('history_lock', `SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, ${HISTORY_KEY}) AS locked`);

// Minutes are aligned to the epoch (date_bin), not to the session's time zone.
const minuteOf = (col: string) => `date_bin('1 minute', ${col}, timestamptz '2000-01-01 00:00:00+00')`;

/**
 * Adds up to $1 events after the cursor, read from the gap-free feed (below the transaction
 * horizon, in (tx, id) order, so a late commit is never skipped), into their queue's minute,
 * and moves the cursor past them, all in one transaction: every event is counted once. The
 * cursor needs no row lock: the caller holds the rollup's advisory lock. So the transaction
 * takes its id only when the writes begin, after the reading and counting: a transaction id
 * holds the event stream's horizon back, and this one is held for the writes alone.
 * Returns how many events it read.
 */
export const rollupEvents = statement<[limit: number], { n: number }>(
  'history_rollup',
  `
WITH ${freshHorizonCte},
cur AS (
  SELECT tx, event_id FROM herald.stats_cursor WHERE id = 1
),
ev AS (
  SELECT e.tx, e.id, e.queue, e.type, ${minuteOf('e.at')} AS minute, e.data
  FROM herald.job_events e, cur
  WHERE (e.tx, e.id) > (cur.tx, cur.event_id)
    AND e.tx >= (SELECT c.tx FROM cur c) -- implied: skips the event partitions below the cursor
    -- The feed's horizon, not the cluster's xmin: another database's long transaction holds
    -- no minute of this one back.
    AND e.tx < (SELECT h FROM horizon)
  ORDER BY e.tx, e.id
  LIMIT $1
),
bins AS (
  SELECT queue, minute, array_fill(0, ARRAY[bin]) || count(*)::int AS hist
  FROM (SELECT queue, minute, floor(4 * ln(greatest((data->>'lagMs')::float8, 0) + 1) / ln(2))::int AS bin
        FROM ev WHERE type = 'claimed' AND data ? 'lagMs') c
  GROUP BY queue, minute, bin
),
counts AS (
  SELECT ev.queue, ev.minute,
         count(*) FILTER (WHERE type = 'enqueued')::int AS enqueued,
         count(*) FILTER (WHERE type = 'claimed')::int AS started,
         count(*) FILTER (WHERE type = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE type = 'failed')::int AS failed,
         coalesce((SELECT herald.sum_bins(b.hist) FROM bins b WHERE b.queue = ev.queue AND b.minute = ev.minute), '{}') AS hist
  FROM ev
  GROUP BY ev.queue, ev.minute
),
added AS (
  INSERT INTO herald.queue_stats AS s (queue, at, enqueued, started, succeeded, failed, wait_hist)
  SELECT queue, minute, enqueued, started, succeeded, failed, hist FROM counts
  ON CONFLICT (queue, at) DO UPDATE SET
    enqueued = s.enqueued + excluded.enqueued,
    started = s.started + excluded.started,
    succeeded = s.succeeded + excluded.succeeded,
    failed = s.failed + excluded.failed,
    wait_hist = herald.add_bins(s.wait_hist, excluded.wait_hist)
),
last AS (
  SELECT tx, id FROM ev ORDER BY tx DESC, id DESC LIMIT 1
),
moved AS (
  UPDATE herald.stats_cursor c SET tx = last.tx, event_id = last.id FROM last WHERE c.id = 1
)
SELECT count(*)::int AS n FROM ev`,
);

/**
 * Queued jobs per queue now (summed from herald.job_counts), written as the current minute's
 * depth (the last write in a minute wins). Queues with history in the last hour get a 0 when nothing is queued.
 */
export const recordDepth = statement<[]>(
  'history_depth',
  `
WITH queued AS (
  SELECT queue, sum(n)::int AS n FROM herald.job_counts WHERE status = 'queued' GROUP BY queue HAVING sum(n) > 0
),
queues AS (
  SELECT queue FROM queued
  UNION
  SELECT DISTINCT queue FROM herald.queue_stats WHERE at >= now() - interval '1 hour'
)
INSERT INTO herald.queue_stats AS s (queue, at, depth)
SELECT q.queue, ${minuteOf('now()')}, coalesce(d.n, 0)
FROM queues q LEFT JOIN queued d USING (queue)
ON CONFLICT (queue, at) DO UPDATE SET depth = excluded.depth`,
);

/** History is kept for $1 ms (30 days). */
export const pruneHistory = statement<[keepMs: number]>(
  'history_prune',
  `DELETE FROM herald.queue_stats WHERE at < now() - make_interval(secs => $1::float8 / 1000)`,
);

/**
 * A queue's history from $2 on, in buckets of $3 (an interval), oldest first: counts summed,
 * wait histograms merged, depth as of the bucket's last minute that recorded one.
 */
export const readHistory = statement<
  [queue: string, from: Date, bucket: string],
  { at: Date; enqueued: number; started: number; succeeded: number; failed: number; hist: number[]; depth: number | null }
>(
  'history_read',
  `
SELECT date_bin($3::interval, at, timestamptz '2000-01-01 00:00:00+00') AS at,
       sum(enqueued)::int AS enqueued, sum(started)::int AS started,
       sum(succeeded)::int AS succeeded, sum(failed)::int AS failed,
       herald.sum_bins(wait_hist) AS hist,
       (array_agg(depth ORDER BY at DESC) FILTER (WHERE depth IS NOT NULL))[1] AS depth
FROM herald.queue_stats
WHERE queue = $1 AND at >= $2
GROUP BY 1
ORDER BY 1`,
);
