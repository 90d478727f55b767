import type { BacklogRow, FeedAfter } from './rows.ts';
import { statement } from './statement.ts';
import { NEWEST_EVENT, freshHorizonCte, horizonCte } from './horizon.ts';

// What is left past the cursor after a short page: nothing (`past` false, or no row when there is
// no event), rows the feed cannot hand out yet (`held`: committed, so visible to this statement,
// but at or above the horizon, because an older transaction that may write here is still open),
// or rows it can hand out now (`past` and not `held`). The last comes from a blocker that ended
// between the read and this statement (or from a commit since, whose own tick comes anyway). The
// server's tailer asks (FeedService.backlog): held, it re-reads in a few ms; readable, at once;
// either instead of waiting for a tick that may never come, or for its safety timer (a latency
// aid, never a correctness one). The newest event decides both: if it is below the horizon,
// every event is.
export const feedBacklog = statement<[...FeedAfter, otherXids: string[]], BacklogRow>(
  'feed_backlog',
  `
WITH ${horizonCte('$3::xid8[]')},
${NEWEST_EVENT}
SELECT (n.tx, n.id) > ($1::xid8, $2::bigint) AS past, n.tx >= (SELECT h FROM horizon) AS held
FROM newest_event n`,
);

// Who holds the stream back: the session whose transaction is the horizon (attributed afresh),
// while committed events past the cursor wait behind it. A session of this database (pid, application name,
// state, transaction and query start; never the query text, which /api/health would expose),
// or a prepared transaction of this database (its gid).
// No row when nothing waits. The blocker's id is returned even if no session can be named.
export const feedHolder = statement<
  FeedAfter,
  {
    xid: string;
    pid: number | null;
    application_name: string | null;
    state: string | null;
    xact_start: Date | null;
    query_start: Date | null;
    gid: string | null;
    age_ms: number | null;
  }
>(
  'feed_holder',
  `
WITH ${freshHorizonCte},
held AS (
  SELECT h FROM horizon
  WHERE EXISTS (SELECT 1 FROM newest_event n WHERE (n.tx, n.id) > ($1::xid8, $2::bigint) AND n.tx >= horizon.h)
    -- The snapshot comes first and the look at other databases after it: a transaction of another
    -- database that ended in between is not known as theirs, and would be named here with no
    -- session. One that has ended holds nothing back any more. (The horizon may be the
    -- snapshot's xmax, an id not yet given out, which pg_xact_status refuses.)
    AND CASE WHEN horizon.h < pg_snapshot_xmax(pg_current_snapshot()) THEN pg_xact_status(horizon.h) = 'in progress' END
)
SELECT held.h::text AS xid, s.pid, s.application_name, s.state, s.xact_start, s.query_start, s.gid,
       (extract(epoch FROM now() - s.xact_start) * 1000)::float8 AS age_ms
FROM held
LEFT JOIN LATERAL (
  SELECT a.pid, a.application_name, a.state, a.xact_start, a.query_start, NULL::text AS gid
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted AND l.transactionid = xid(held.h)
  UNION ALL
  SELECT NULL, NULL, 'prepared', p.prepared, NULL, p.gid
  FROM pg_prepared_xacts p WHERE p.transaction = xid(held.h) AND p.database = current_database()
  LIMIT 1
) s ON true`,
);
