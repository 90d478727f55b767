// The feed's horizon: the lowest transaction id that may still write herald.job_events in THIS
// database. Every transaction below it has ended, so the events below it are final.
//
// A snapshot lists the transactions running when it was taken (xip, top-level ids: the events'
// `tx` is always the top-level id, pg_current_xact_id()), and every id below its xmax that is not
// listed has ended. Its xmin, the lowest listed id, is cluster-wide: a transaction in another
// database would hold every board back. So the horizon skips the listed ids that are POSITIVELY
// another database's, and keeps everything else as a blocker:
// - a session of another database (pg_stat_activity) whose backend_xid is that id, AND which
//   holds the id's own lock (pg_locks: only the owner holds ExclusiveLock on its transactionid).
//   pg_stat_activity reads a backend's database and its xid in two steps, so on its own it could
//   pair a session that just left with the id of the one that took its slot; the lock names the
//   owner by pid, and one pid is one process for the length of a statement;
// - a prepared transaction of another database (pg_prepared_xacts).
// A transaction's database never changes, so these facts stay true whenever they were read: they
// need not come from the snapshot itself. The snapshot does: pg_current_snapshot() is the
// statement's own, the one that reads the rows, so "ended" and "visible" agree.
//
// Cost: reading pg_locks and pg_stat_activity is not free, so it happens only when it can change
// the answer: when the newest event lies past the cursor at or above xmin (then, and only then,
// some event past the cursor waits at or above xmin). Otherwise the horizon is xmin itself: nothing
// past the cursor lies between xmin and the attributed horizon. The newest event is one step down
// the (tx, id) index; an EXISTS over a range would let the planner pick a scan of the whole table.
//
// `afterTx`, `afterId`: SQL for the cursor. The fragment defines the CTEs `newest_event(tx, id)`
// and `horizon(snap, h)`.
export const horizonCte = (afterTx: string, afterId: string) => `
horizon_snapshot AS MATERIALIZED (SELECT pg_current_snapshot() AS snap),
newest_event AS MATERIALIZED (SELECT e.tx, e.id FROM herald.job_events e ORDER BY e.tx DESC, e.id DESC LIMIT 1),
other_database_xids AS MATERIALIZED (
  SELECT a.backend_xid AS x
  FROM pg_stat_activity a
  JOIN pg_locks l ON l.pid = a.pid AND l.transactionid = a.backend_xid
  WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted
    AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL
  SELECT p.transaction FROM pg_prepared_xacts p WHERE p.database <> current_database()
),
horizon AS MATERIALIZED (
  SELECT hs.snap, CASE
    WHEN NOT EXISTS (
      SELECT 1 FROM newest_event n
      WHERE (n.tx, n.id) > (${afterTx}, ${afterId}) AND n.tx >= pg_snapshot_xmin(hs.snap)
    ) THEN pg_snapshot_xmin(hs.snap)
    ELSE (
      SELECT coalesce(min(r.x), pg_snapshot_xmax(hs.snap))
      FROM pg_snapshot_xip(hs.snap) AS r(x)
      WHERE NOT EXISTS (SELECT 1 FROM other_database_xids o WHERE o.x = xid(r.x))
    )
  END AS h
  FROM horizon_snapshot hs
)`;
