-- The event log, partitioned by its key's first column (tx: the writing transaction's id, which
-- only grows), so retention drops whole partitions instead of deleting rows (no dead tuples, no
-- vacuum debt). In place: the old table becomes the first partition, [MINVALUE, bound), and is not
-- rewritten; ATTACH reads it once to check the bound (no CHECK constraint first: that read would be
-- the same one). The id sequence goes on where the old one stopped. Events written before the
-- maintainer adds partitions ahead (add_event_partitions) land in job_events_default, which
-- retention still empties row by row as before.
DO $$
DECLARE
  last bigint;
  called boolean;
  bound bigint;
BEGIN
  LOCK TABLE herald.job_events IN ACCESS EXCLUSIVE MODE;
  SELECT s.last_value, s.is_called INTO last, called FROM herald.job_events_id_seq s;
  -- Above every event held and every transaction that could still write one (ours included).
  SELECT greatest(coalesce((SELECT e.tx::text::bigint FROM herald.job_events e ORDER BY e.tx DESC, e.id DESC LIMIT 1), 0),
                  pg_current_xact_id()::text::bigint) + 1
  INTO bound;
  DROP TRIGGER job_events_after_insert ON herald.job_events;
  ALTER TABLE herald.job_events RENAME TO job_events_0;
  ALTER INDEX herald.job_events_pkey RENAME TO job_events_0_pkey;
  ALTER INDEX herald.job_events_job RENAME TO job_events_0_job;
  -- A partition has no identity of its own: the parent's sequence numbers every row.
  ALTER TABLE herald.job_events_0 ALTER COLUMN id DROP IDENTITY;
  CREATE TABLE herald.job_events (
    id bigint GENERATED ALWAYS AS IDENTITY NOT NULL,
    job_id bigint NOT NULL,
    tx xid8 DEFAULT pg_current_xact_id() NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    queue text NOT NULL,
    kind text NOT NULL,
    type herald.event_type NOT NULL,
    status herald.job_status NOT NULL,
    attempt integer NOT NULL,
    worker text,
    data jsonb,
    flow_id bigint,
    CONSTRAINT job_events_pkey PRIMARY KEY (tx, id)
  ) PARTITION BY RANGE (tx);
  CREATE INDEX job_events_job ON herald.job_events USING btree (job_id);
  PERFORM setval('herald.job_events_id_seq', greatest(last, 1), called AND last > 0);
  -- The old indexes match the parent's, so they are attached as they are, not rebuilt.
  EXECUTE format('ALTER TABLE herald.job_events ATTACH PARTITION herald.job_events_0 FOR VALUES FROM (MINVALUE) TO (%L)', bound);
  -- Overflow and the events retention keeps from dropped partitions; emptied row by row, so vacuum it early.
  CREATE TABLE herald.job_events_default PARTITION OF herald.job_events DEFAULT
    WITH (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
  CREATE TRIGGER job_events_after_insert AFTER INSERT ON herald.job_events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION herald.job_events_after_insert();
END $$;
--> statement-breakpoint

-- The ranged partitions of job_events with their bounds as numbers ([lo, hi); lo 0 for MINVALUE).
CREATE FUNCTION herald.event_partitions() RETURNS TABLE (part regclass, lo bigint, hi bigint)
LANGUAGE sql STABLE AS $$
  SELECT c.oid::regclass,
         CASE WHEN b[1] = 'MINVALUE' THEN 0 ELSE trim(b[1], '''')::bigint END,
         trim(b[2], '''')::bigint
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \((.*)\) TO \((.*)\)') AS b
  WHERE i.inhparent = 'herald.job_events'::regclass AND b IS NOT NULL
$$;
--> statement-breakpoint

-- Keeps partitions of `width` transaction ids ready until `lead` ids past the next one to be
-- assigned. Each is created apart and ATTACHed: that locks the parent only against other DDL (SHARE
-- UPDATE EXCLUSIVE), and the default partition fully while it checks it holds no row of the new
-- range. A range the default partition already holds rows of (the maintainer did not run for a
-- while) is skipped: the next partition starts `slack` ids ahead. Returns how many it made, or -1
-- when another maintainer has the partitions (advisory lock 'HRLD'/4, see queue/locks.ts), a lock
-- was not had within `lock_ms`, or a transaction ran into the range meanwhile: the next pass retries.
CREATE FUNCTION herald.add_event_partitions(width bigint, lead bigint, slack bigint, lock_ms integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  next_x bigint := pg_snapshot_xmax(pg_current_snapshot())::text::bigint;
  lo bigint;
  made integer := 0;
  name text;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1213353028, 4) THEN RETURN -1; END IF;
  PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
  SELECT greatest(max(p.hi),
                  (SELECT d.tx::text::bigint + 1 FROM herald.job_events_default d ORDER BY d.tx DESC, d.id DESC LIMIT 1))
  INTO lo FROM herald.event_partitions() p;
  IF coalesce(lo, 0) <= next_x THEN lo := next_x + slack; END IF;
  WHILE lo < next_x + lead LOOP
    name := 'job_events_' || lo;
    EXECUTE format('CREATE TABLE herald.%I (LIKE herald.job_events)', name);
    EXECUTE format('ALTER TABLE herald.job_events ATTACH PARTITION herald.%I FOR VALUES FROM (%L) TO (%L)', name, lo, lo + width);
    made := made + 1;
    lo := lo + width;
  END LOOP;
  RETURN made;
EXCEPTION WHEN lock_not_available OR check_violation THEN
  RETURN -1;
END $$;
--> statement-breakpoint

-- Retention of one partition: the oldest one no transaction can still write to, once its newest
-- event is older than `cutoff` and the queue-history rollup has read past it. The events of jobs
-- that still exist (running, scheduled, finished too recently, dead letters) or that a bulk delete
-- removed are copied to the default partition first (their range is no partition's any more),
-- where row-by-row retention removes them with their jobs, as before; the rest goes with the
-- DROP, and the retention horizon moves up to its newest event in the same transaction.
-- Returns 1 when it dropped one, 0 when none is due, -1 when busy (as above).
CREATE FUNCTION herald.drop_event_partition(cutoff timestamp with time zone, lock_ms integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  p record;
  last_tx xid8;
  last_id bigint;
  last_at timestamp with time zone;
  top_job bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1213353028, 4) THEN RETURN -1; END IF;
  SELECT * INTO p FROM herald.event_partitions() e
  WHERE e.hi <= pg_snapshot_xmin(pg_current_snapshot())::text::bigint
  ORDER BY e.hi LIMIT 1;
  IF NOT FOUND THEN RETURN 0; END IF;
  EXECUTE format('SELECT e.tx, e.id, e.at FROM %s e ORDER BY e.tx DESC, e.id DESC LIMIT 1', p.part) INTO last_tx, last_id, last_at;
  IF last_at >= cutoff THEN RETURN 0; END IF;
  IF last_tx IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM herald.stats_cursor c WHERE c.id = 1 AND (c.tx, c.event_id) >= (last_tx, last_id)
  ) THEN RETURN 0; END IF;
  EXECUTE format('SELECT max(e.job_id) FROM %s e', p.part) INTO top_job;
  PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
  EXECUTE format('ALTER TABLE herald.job_events DETACH PARTITION %s', p.part);
  EXECUTE format($q$
    INSERT INTO herald.job_events (id, job_id, tx, at, queue, kind, type, status, attempt, worker, data, flow_id)
    OVERRIDING SYSTEM VALUE
    SELECT e.id, e.job_id, e.tx, e.at, e.queue, e.kind, e.type, e.status, e.attempt, e.worker, e.data, e.flow_id
    FROM %s e
    WHERE e.job_id IN (SELECT j.id FROM herald.jobs j WHERE j.id <= $1
                       UNION ALL SELECT g.job_id FROM herald.deleted_jobs g WHERE g.job_id <= $1)
    ORDER BY e.tx, e.id$q$, p.part) USING top_job;
  IF last_tx IS NOT NULL THEN
    UPDATE herald.retention_horizon h SET tx = last_tx, event_id = last_id
    WHERE h.id = 1 AND (last_tx, last_id) > (h.tx, h.event_id);
  END IF;
  EXECUTE format('DROP TABLE %s', p.part);
  RETURN 1;
EXCEPTION WHEN lock_not_available THEN
  RETURN -1;
END $$;
