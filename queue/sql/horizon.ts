import { statement } from './statement.ts';

// The feed's horizon: a transaction id below which every transaction that could write
// herald.job_events in THIS database has ended, so the events below it are final.
//
// A snapshot lists the transactions running when it was taken (xip: top-level ids, and the
// events' `tx` is always the top-level id, pg_current_xact_id()); every id below its xmax that is
// not listed has ended. Its xmin, the lowest listed id, is cluster-wide: a transaction in another
// database would hold every board back. So the horizon is the lowest listed id that is NOT known
// to be another database's (or xmax when none is left). Knowing is the job of otherDatabaseXids
// below; its answers are facts that never expire (a transaction's database never changes, and an
// xid8 is never reused), so a list of them can be kept and passed in later, however stale: an id
// on it that has ended is simply no longer listed, and an id missing from it stays a blocker. An
// id is never skipped unless it was positively attributed to another database.
//
// The snapshot is the statement's own (pg_current_snapshot() is the active snapshot, the one that
// reads the rows), so "ended" and "visible" agree.
//
// `otherXids`: SQL for an xid8[] of ids known to be other databases'. Defines the CTE `horizon(h)`.
export const horizonCte = (otherXids: string) => `
horizon AS MATERIALIZED (
  SELECT coalesce(
    (SELECT min(r.x) FROM pg_snapshot_xip(s.snap) AS r(x) WHERE r.x <> ALL (${otherXids})),
    pg_snapshot_xmax(s.snap)
  ) AS h
  FROM (SELECT pg_current_snapshot() AS snap) s
)`;

// Running transactions positively known to be another database's:
// - a session of another database (pg_stat_activity) whose backend_xid is that id, AND which holds
//   the id's own lock (pg_locks: only the owner holds ExclusiveLock on its transactionid).
//   pg_stat_activity reads a backend's database and its xid in two steps, so on its own it could
//   pair a session that just left with the id of the one that took its slot; the lock names the
//   owner by pid, and one pid is one process for the length of a statement;
// - a prepared transaction of another database (pg_prepared_xacts).
// Anything else (this database, no database, not visible to this role) is not listed.
const OTHER_DATABASE_XIDS = `
SELECT a.backend_xid AS x
FROM pg_stat_activity a
JOIN pg_locks l ON l.pid = a.pid AND l.transactionid = a.backend_xid
WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
  AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
UNION ALL
SELECT p.transaction FROM pg_prepared_xacts p WHERE p.database <> current_database()`;

/** The running transactions of other databases, as full ids (reading pg_locks and pg_stat_activity: not free, so only when the feed is stuck). */
export const otherDatabaseXids = statement<[], { x: string }>(
  'other_database_xids',
  `
SELECT r.x::text AS x
FROM pg_snapshot_xip(pg_current_snapshot()) AS r(x)
WHERE xid(r.x) IN (${OTHER_DATABASE_XIDS})`,
);

// Some event past a cursor is at or above a horizon iff the newest event is: one step down the
// (tx, id) index (an EXISTS over the range could let the planner scan the whole table).
export const NEWEST_EVENT = `newest_event AS MATERIALIZED (SELECT e.tx, e.id FROM herald.job_events e ORDER BY e.tx DESC, e.id DESC LIMIT 1)`;

/**
 * The horizon with a fresh look at other databases, for the occasional caller with no list at
 * hand (a stream's start, a report). The look is only taken when it can change the answer: when
 * the newest event is at or above xmin. Defines `newest_event(tx, id)` and `horizon(h)`.
 */
export const freshHorizonCte = `
${NEWEST_EVENT},
horizon AS MATERIALIZED (
  SELECT CASE
    WHEN NOT EXISTS (SELECT 1 FROM newest_event n WHERE n.tx >= pg_snapshot_xmin(s.snap)) THEN pg_snapshot_xmin(s.snap)
    ELSE coalesce(
      (SELECT min(r.x) FROM pg_snapshot_xip(s.snap) AS r(x) WHERE xid(r.x) NOT IN (SELECT o.x FROM (${OTHER_DATABASE_XIDS}) o WHERE o.x IS NOT NULL)),
      pg_snapshot_xmax(s.snap))
  END AS h
  FROM (SELECT pg_current_snapshot() AS snap) s
)`;
