import type { EventRow, FeedAfter } from './rows.ts';
import { statement } from './statement.ts';

// The gap-free event feed. Event ids are not commit-ordered (event 101 can commit before 100, and
// a reader following `id > last` would skip 100 for ever), so the feed
// reads only rows written by transactions below the horizon, xmin of a fresh snapshot: every
// transaction under it has ended, so that set never grows again. Ordered by (tx, id), the
// cursor is that pair; resuming after it yields exactly what came later.
const EVENT_COLUMNS = `e.id, e.job_id, e.tx::text AS tx, e.at, e.queue, e.kind, e.type, e.status, e.attempt, e.worker, e.data`;

export const readFeed = statement<[...FeedAfter, limit: number], EventRow>(
  'feed',
  `
SELECT ${EVENT_COLUMNS}
FROM herald.job_events e
WHERE (e.tx, e.id) > ($1::xid8, $2::bigint)
  AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY e.tx, e.id
LIMIT $3`,
);

/** The same feed restricted to one job or one queue, for replays that are filtered. */
export const readFeedFiltered = statement<[...FeedAfter, limit: number, jobId: string | null, queue: string | null], EventRow>(
  'feed_filtered',
  `
SELECT ${EVENT_COLUMNS}
FROM herald.job_events e
WHERE (e.tx, e.id) > ($1::xid8, $2::bigint)
  AND e.tx < pg_snapshot_xmin(pg_current_snapshot())
  AND ($4::bigint IS NULL OR e.job_id = $4)
  AND ($5::text IS NULL OR e.queue = $5)
ORDER BY e.tx, e.id
LIMIT $3`,
);

/** The newest position below the horizon: a live-only stream starts here. */
export const feedHead = statement<[], { tx: string; id: string }>(
  'feed_head',
  `
SELECT e.tx::text AS tx, e.id
FROM herald.job_events e
WHERE e.tx < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY e.tx DESC, e.id DESC
LIMIT 1`,
);

/** A job's own events, oldest first. */
export const jobEvents = statement<[jobId: string], EventRow>(
  'job_events',
  `SELECT ${EVENT_COLUMNS} FROM herald.job_events e WHERE e.job_id = $1 ORDER BY e.tx, e.id`,
);
