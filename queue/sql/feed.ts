import type { EventRow, FeedAfter } from './rows.ts';
import { statement } from './statement.ts';
import { freshHorizonCte, horizonCte } from './horizon.ts';

// The gap-free event feed. Event ids are not commit-ordered (event 101 can commit before 100, and
// a reader following `id > last` would skip 100 for ever), so the feed reads only rows written by
// transactions below the horizon (horizon.ts): every transaction under it that could write here
// has ended, so that set never grows again. Ordered by (tx, id), the cursor is that pair;
// resuming after it yields exactly what came later. On a standby: replica.ts.
export const EVENT_COLUMNS = `e.id, e.job_id, e.tx::text AS tx, e.at, e.queue, e.kind, e.type, e.status, e.attempt, e.worker, e.data, e.flow_id::text AS flow_id`;

/** The tailer's read: events past the cursor and below the horizon. $4: ids known to be other databases' (horizon.ts). */
export const readFeed = statement<[...FeedAfter, limit: number, otherXids: string[]], EventRow>(
  'feed',
  `
WITH ${horizonCte('$4::xid8[]')}
SELECT ${EVENT_COLUMNS}
FROM herald.job_events e
WHERE (e.tx, e.id) > ($1::xid8, $2::bigint)
  AND e.tx >= $1::xid8 -- implied, but lets the plan skip the event partitions below the cursor
  AND e.tx < (SELECT h FROM horizon)
ORDER BY e.tx, e.id
LIMIT $3`,
);

/**
 * A replay: the events in (after, through], optionally for one job, one queue or one flow. `through` is a
 * position the tailer reached, so every event at or before it is final: no horizon is needed, and
 * none can stop the replay short of it.
 */
export const readFeedThrough = statement<
  [...FeedAfter, throughTx: string, throughId: string, limit: number, jobId: string | null, queue: string | null, flowId: string | null],
  EventRow
>(
  'feed_through',
  `
SELECT ${EVENT_COLUMNS}
FROM herald.job_events e
WHERE (e.tx, e.id) > ($1::xid8, $2::bigint)
  AND (e.tx, e.id) <= ($3::xid8, $4::bigint)
  AND e.tx BETWEEN $1::xid8 AND $3::xid8 -- implied: only the partitions in range are read
  AND ($6::bigint IS NULL OR e.job_id = $6)
  AND ($7::text IS NULL OR e.queue = $7)
  AND ($8::bigint IS NULL OR e.flow_id = $8)
ORDER BY e.tx, e.id
LIMIT $5`,
);

/**
 * The newest events at or before a position the tailer reached (so all final), newest first,
 * optionally of one queue: what a page that opens shows before live events come.
 */
export const readFeedRecent = statement<[...FeedAfter, limit: number, queue: string | null], EventRow>(
  'feed_recent',
  `
SELECT ${EVENT_COLUMNS}
FROM herald.job_events e
WHERE (e.tx, e.id) <= ($1::xid8, $2::bigint)
  AND e.tx <= $1::xid8 -- implied: the plan reads the newest partitions first
  AND ($4::text IS NULL OR e.queue = $4)
ORDER BY e.tx DESC, e.id DESC
LIMIT $3`,
);

/** The newest event below the horizon (with a fresh look at other databases; freshHorizonCte first). */
const HEAD_CTE = `head AS (
  SELECT e.tx, e.id FROM herald.job_events e
  WHERE e.tx < (SELECT h FROM horizon)
  ORDER BY e.tx DESC, e.id DESC
  LIMIT 1
)`;

/** The newest position below the horizon: where the tailer starts. */
export const feedHead = statement<[], { tx: string; id: string }>(
  'feed_head',
  `
WITH ${freshHorizonCte}, ${HEAD_CTE}
SELECT h.tx::text AS tx, h.id FROM head h`,
);

/**
 * A live-only stream's start: the head (as feedHead; null tx when there is no event) and the
 * retention horizon, from one snapshot, so a removal the head no longer shows is in the horizon.
 */
export const feedLiveStart = statement<[], { tx: string | null; id: string | null; removed_tx: string | null; removed_id: string | null }>(
  'feed_live_start',
  `
WITH ${freshHorizonCte}, ${HEAD_CTE}
SELECT h.tx::text AS tx, h.id::text AS id, r.tx::text AS removed_tx, r.event_id::text AS removed_id
FROM (SELECT) one
LEFT JOIN head h ON true
LEFT JOIN herald.retention_horizon r ON r.id = 1`,
);

/**
 * A page of a job's own events, oldest first: ids above $2 (null: from the start), $3 of them.
 * One job's writes take turns on its row lock, so its events' ids follow their commit order.
 */
export const jobEvents = statement<[jobId: string, after: string | null, limit: number], EventRow>(
  'job_events',
  `SELECT ${EVENT_COLUMNS} FROM herald.job_events e
WHERE e.job_id = $1 AND ($2::bigint IS NULL OR e.id > $2)
ORDER BY e.id
LIMIT $3`,
);
