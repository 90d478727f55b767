-- Hand-written: the gate row is rebuilt from a snapshot taken AFTER its lock.
--
-- 0010's trigger rebuilt queue_gate.held in one UPDATE whose subquery read herald.queues on the
-- statement's snapshot. When that UPDATE had to wait for the gate row (another settings change
-- not yet committed), it wrote a list computed before the other change committed, and lost it:
-- two sessions each pausing one queue left the gate holding only one of them.
--
-- Now the trigger first locks the gate row, and only then reads herald.queues in a new
-- statement. In READ COMMITTED each statement of a volatile function takes a fresh snapshot, so
-- the read sees every change committed before the lock was granted; every change that commits
-- later updates the gate itself, after us. Whatever the interleaving, the last writer of the
-- gate has seen every committed setting. (A REPEATABLE READ or SERIALIZABLE change that meets a
-- concurrent one gets a serialization error from the lock instead of a stale list.)
CREATE OR REPLACE FUNCTION herald.queues_after_change() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM 1 FROM herald.queue_gate WHERE id = 1 FOR UPDATE;
  UPDATE herald.queue_gate
  SET held = coalesce((SELECT array_agg(queue ORDER BY queue) FROM herald.queues
                       WHERE paused OR concurrency IS NOT NULL OR group_concurrency IS NOT NULL
                          OR rate_count IS NOT NULL), '{}')
  WHERE id = 1;
  PERFORM pg_notify('herald_control', 'queues');
  RETURN NULL;
END $$;
