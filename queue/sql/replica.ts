import type { BacklogRow, EventRow, FeedAfter } from './rows.ts';
import { statement } from './statement.ts';
import { horizonCte } from './horizon.ts';
import { EVENT_COLUMNS } from './feed.ts';

// The event feed read from a streaming standby (docs/replicas.md). A standby cannot find the
// horizon itself: its snapshots carry the right xmin but list no running transactions
// (pg_current_snapshot() there is "xmin:xmax:" with an empty list), and pg_locks and
// pg_stat_activity show none of the primary's sessions. So the primary names the position:
// its horizon (horizon.ts, database-local through the list of other databases' ids it learned)
// and its WAL insert position, read after that snapshot. Every transaction below the horizon had
// ended, so its commit or abort record lies before that position; once the standby's replay has
// passed it, a snapshot taken there sees every event below the horizon that will ever exist,
// exactly as the primary would.

/** On the primary: the horizon and the WAL position a standby must have replayed to read below it. */
export const primaryFeedPosition = statement<[otherXids: string[]], { horizon: string; lsn: string }>(
  'primary_feed_position',
  `
WITH ${horizonCte('$1::xid8[]')}
SELECT h::text AS horizon, pg_current_wal_insert_lsn()::text AS lsn FROM horizon`,
);

/** On the primary: its WAL insert position now (what a standby must reach to see what was committed so far). */
export const primaryWalPosition = statement<[], { lsn: string }>('primary_wal_position', `SELECT pg_current_wal_insert_lsn()::text AS lsn`);

/**
 * On the replica: how far it has replayed. A server that is not in recovery (HERALD_READ_URL naming
 * the primary itself) has everything it wrote.
 */
export const replicaReplayPosition = statement<[], { lsn: string }>(
  'replica_replay_position',
  `SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text AS lsn`,
);

/** On the replica, once it has replayed the primary's position: the events past the cursor and below the primary's horizon. */
export const readFeedBelow = statement<[...FeedAfter, limit: number, horizon: string], EventRow>(
  'feed_below',
  `
SELECT ${EVENT_COLUMNS}
FROM herald.job_events e
WHERE (e.tx, e.id) > ($1::xid8, $2::bigint)
  AND e.tx >= $1::xid8 -- implied, but lets the plan skip the event partitions below the cursor
  AND e.tx < $4::xid8
ORDER BY e.tx, e.id
LIMIT $3`,
);

/** As feedBacklog (feed-backlog.ts), against the primary's horizon of the last read. */
export const feedBacklogBelow = statement<[...FeedAfter, horizon: string], BacklogRow>(
  'feed_backlog_below',
  `
SELECT (n.tx, n.id) > ($1::xid8, $2::bigint) AS past, n.tx >= $3::xid8 AS held
FROM (SELECT e.tx, e.id FROM herald.job_events e ORDER BY e.tx DESC, e.id DESC LIMIT 1) n`,
);
