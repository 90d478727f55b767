-- A partition drop no longer copies the events it keeps while it locks out the log's readers and
-- writers. They are copied before, in short batches, into job_events_staging (not a partition: no
-- reader sees it), and under the lock that table takes the dropped partition's place, with the same
-- range (job_events_kept_<lo>): CHECK constraints on it and on the default partition spare ATTACH
-- both scans, so the lock is held for catalog work only. A kept partition holds events of jobs that
-- still exist; retention deletes them row by row with their jobs, and once few are left
-- (`small` rows or fewer) they go to job_events_default and the partition with them.
-- A partition whose kept events are that few goes as before: copied under the lock.
CREATE TABLE herald.job_events_staging (LIKE herald.job_events, CONSTRAINT job_events_staging_pkey PRIMARY KEY (tx, id))
  WITH (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
--> statement-breakpoint
CREATE INDEX job_events_staging_job ON herald.job_events_staging USING btree (job_id);
--> statement-breakpoint

-- The oldest partition due for retention (see drop_event_partition), kept partitions aside.
CREATE FUNCTION herald.due_event_partition(cutoff timestamp with time zone)
RETURNS TABLE (part regclass, lo bigint, hi bigint, last_tx xid8, last_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
  p record;
  last_at timestamp with time zone;
BEGIN
  SELECT * INTO p FROM herald.event_partitions() e
  WHERE e.hi <= pg_snapshot_xmin(pg_current_snapshot())::text::bigint
    AND (SELECT c.relname FROM pg_class c WHERE c.oid = e.part) NOT LIKE 'job\_events\_kept\_%'
  ORDER BY e.hi LIMIT 1;
  IF NOT FOUND THEN RETURN; END IF;
  EXECUTE format('SELECT e.tx, e.id, e.at FROM %s e ORDER BY e.tx DESC, e.id DESC LIMIT 1', p.part) INTO last_tx, last_id, last_at;
  IF last_at >= cutoff THEN RETURN; END IF;
  IF last_tx IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM herald.stats_cursor c WHERE c.id = 1 AND (c.tx, c.event_id) >= (last_tx, last_id)
  ) THEN RETURN; END IF;
  part := p.part; lo := p.lo; hi := p.hi;
  RETURN NEXT;
END $$;
--> statement-breakpoint

-- Readies job_events_staging for the partition due (emptied unless it holds that partition's
-- events from an earlier pass, then resumed) and a NOT VALID constraint on the default partition
-- that excludes its range (validated apart: stage_validate). Returns the partition and the position
-- to copy after; no row when none is due or another maintainer has it or a lock was not had.
CREATE FUNCTION herald.stage_event_partition(cutoff timestamp with time zone, lock_ms integer)
RETURNS TABLE (part regclass, tx xid8, id bigint)
LANGUAGE plpgsql AS $$
DECLARE
  d record;
  c text;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1213353028, 4) THEN RETURN; END IF;
  SELECT * INTO d FROM herald.due_event_partition(cutoff);
  IF NOT FOUND THEN RETURN; END IF;
  PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
  IF NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = 'herald.job_events_staging'::regclass
                 AND k.conname = 'staging_in_' || d.lo) THEN
    TRUNCATE herald.job_events_staging;
    FOR c IN SELECT k.conname FROM pg_constraint k WHERE k.conrelid = 'herald.job_events_staging'::regclass AND k.contype = 'c' LOOP
      EXECUTE format('ALTER TABLE herald.job_events_staging DROP CONSTRAINT %I', c);
    END LOOP;
    EXECUTE format('ALTER TABLE herald.job_events_staging ADD CONSTRAINT %I CHECK (%s)',
                   'staging_in_' || d.lo, pg_get_partition_constraintdef(d.part));
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = 'herald.job_events_default'::regclass
                 AND k.conname = 'default_not_' || d.lo) THEN
    EXECUTE format('ALTER TABLE herald.job_events_default ADD CONSTRAINT %I CHECK (NOT (%s)) NOT VALID',
                   'default_not_' || d.lo, pg_get_partition_constraintdef(d.part));
  END IF;
  part := d.part;
  SELECT s.tx, s.id INTO tx, id FROM herald.job_events_staging s ORDER BY s.tx DESC, s.id DESC LIMIT 1;
  tx := coalesce(tx, '0'::xid8); id := coalesce(id, 0);
  RETURN NEXT;
EXCEPTION WHEN lock_not_available THEN
  RETURN;
END $$;
--> statement-breakpoint

-- Validates the default partition's constraints from stage_event_partition: a scan that locks out
-- only other DDL. False when a lock was not had.
CREATE FUNCTION herald.stage_validate(lock_ms integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  c text;
BEGIN
  PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
  FOR c IN SELECT k.conname FROM pg_constraint k
           WHERE k.conrelid = 'herald.job_events_default'::regclass AND k.conname LIKE 'default\_not\_%' AND NOT k.convalidated LOOP
    EXECUTE format('ALTER TABLE herald.job_events_default VALIDATE CONSTRAINT %I', c);
  END LOOP;
  RETURN true;
EXCEPTION WHEN lock_not_available THEN
  RETURN false;
END $$;
--> statement-breakpoint

-- Copies the kept events among the next `lim` events of partition `part_name` after (after_tx,
-- after_id) to job_events_staging; returns the last position read, no row at the end, or a null
-- position when busy (another maintainer, or a lock not had within `lock_ms`) or the staging is no
-- longer that partition's (the pass stops; the next one resumes). Kept: of a job that exists or a bulk delete removed. Retention deletes a job's events
-- from job_events_staging too, so a job deleted after its batch leaves none there; within the
-- batch, the finished jobs (the only ones retention deletes) are locked FOR KEY SHARE, which its
-- SKIP LOCKED passes over, and a job deleted just before is read as gone. Queued and running jobs
-- are not locked: claims would skip them.
CREATE FUNCTION herald.stage_kept_events(part_name text, after_tx xid8, after_id bigint, lim integer, lock_ms integer)
RETURNS TABLE (tx xid8, id bigint)
LANGUAGE plpgsql AS $$
DECLARE
  part regclass;
  batch_jobs bigint[];
  kept bigint[];
  gone bigint[];
BEGIN
  IF NOT pg_try_advisory_xact_lock(1213353028, 4) THEN RETURN NEXT; RETURN; END IF;
  SELECT e.part INTO part FROM herald.event_partitions() e
  JOIN pg_constraint k ON k.conrelid = 'herald.job_events_staging'::regclass AND k.conname = 'staging_in_' || e.lo
  WHERE e.part = to_regclass(part_name);
  IF part IS NULL THEN RETURN NEXT; RETURN; END IF;
  PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
  EXECUTE format($q$SELECT (array_agg(b.tx ORDER BY b.tx DESC, b.id DESC))[1], (array_agg(b.id ORDER BY b.tx DESC, b.id DESC))[1],
                            array_agg(DISTINCT b.job_id)
    FROM (SELECT e.tx, e.id, e.job_id FROM %s e WHERE (e.tx, e.id) > ($1, $2) ORDER BY e.tx, e.id LIMIT $3) b$q$, part)
    INTO tx, id, batch_jobs USING after_tx, after_id, lim;
  IF tx IS NULL THEN RETURN; END IF;
  PERFORM 1 FROM herald.jobs j WHERE j.id = ANY (batch_jobs) AND j.status IN ('succeeded', 'failed', 'cancelled') FOR KEY SHARE;
  -- A new statement, a new snapshot: a job deleted while we waited for its lock is gone from jobs here.
  SELECT array_agg(j.id) INTO kept FROM herald.jobs j WHERE j.id = ANY (batch_jobs);
  SELECT array_agg(g.job_id) INTO gone FROM (SELECT g.job_id FROM herald.deleted_jobs g WHERE g.job_id = ANY (batch_jobs) FOR KEY SHARE) g;
  -- Two maintainers may copy the same range (each resumes where the staging ends): the same rows.
  EXECUTE format($q$INSERT INTO herald.job_events_staging
    SELECT e.* FROM %s e
    WHERE (e.tx, e.id) > ($1, $2) AND (e.tx, e.id) <= ($3, $4) AND (e.job_id = ANY ($5) OR e.job_id = ANY ($6))
    ON CONFLICT DO NOTHING$q$, part)
    USING after_tx, after_id, tx, id, coalesce(kept, '{}'), coalesce(gone, '{}');
  RETURN NEXT;
EXCEPTION WHEN lock_not_available THEN
  tx := NULL; id := NULL;
  RETURN NEXT;
END $$;
--> statement-breakpoint

-- Retention of one partition (see due_event_partition for which), once stage_kept_events copied
-- all of it: under the lock, job_events_staging takes its place as job_events_kept_<lo>, or, when it
-- holds `small` events or fewer, they go to job_events_default instead; the rest goes with the
-- DROP, and the retention horizon moves up to its newest event in the same transaction.
-- Returns 1 when it dropped one, 0 when none is due or the staging is not that partition's, -1
-- when busy (another maintainer, or a lock not had within `lock_ms`).
CREATE FUNCTION herald.swap_event_partition(part regclass, cutoff timestamp with time zone, lock_ms integer, small integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  d record;
  n bigint;
  kept text;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1213353028, 4) THEN RETURN -1; END IF;
  SELECT * INTO d FROM herald.due_event_partition(cutoff);
  IF NOT FOUND OR d.part <> part OR NOT EXISTS (
    SELECT 1 FROM pg_constraint k WHERE k.conrelid = 'herald.job_events_staging'::regclass AND k.conname = 'staging_in_' || d.lo
  ) OR NOT EXISTS (
    SELECT 1 FROM pg_constraint k WHERE k.conrelid = 'herald.job_events_default'::regclass AND k.conname = 'default_not_' || d.lo AND k.convalidated
  ) THEN RETURN 0; END IF;
  PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
  SELECT count(*) INTO n FROM (SELECT 1 FROM herald.job_events_staging LIMIT small + 1) s;
  EXECUTE format('ALTER TABLE herald.job_events DETACH PARTITION %s', d.part);
  IF n <= small THEN
    EXECUTE format('ALTER TABLE herald.job_events_default DROP CONSTRAINT %I', 'default_not_' || d.lo);
    INSERT INTO herald.job_events (id, job_id, tx, at, queue, kind, type, status, attempt, worker, data, flow_id)
    OVERRIDING SYSTEM VALUE
    SELECT e.id, e.job_id, e.tx, e.at, e.queue, e.kind, e.type, e.status, e.attempt, e.worker, e.data, e.flow_id
    FROM herald.job_events_staging e ORDER BY e.tx, e.id;
    TRUNCATE herald.job_events_staging;
    EXECUTE format('ALTER TABLE herald.job_events_staging DROP CONSTRAINT %I', 'staging_in_' || d.lo);
  ELSE
    kept := 'job_events_kept_' || d.lo;
    EXECUTE format('ALTER TABLE herald.job_events ATTACH PARTITION herald.job_events_staging FOR VALUES FROM (%s) TO (%L)',
                   CASE WHEN d.lo = 0 THEN 'MINVALUE' ELSE quote_literal(d.lo) END, d.hi);
    EXECUTE format('ALTER TABLE herald.job_events_default DROP CONSTRAINT %I', 'default_not_' || d.lo);
    EXECUTE format('ALTER TABLE herald.job_events_staging RENAME TO %I', kept);
    EXECUTE format('ALTER INDEX herald.job_events_staging_pkey RENAME TO %I', kept || '_pkey');
    EXECUTE format('ALTER INDEX herald.job_events_staging_job RENAME TO %I', kept || '_job');
    CREATE TABLE herald.job_events_staging (LIKE herald.job_events, CONSTRAINT job_events_staging_pkey PRIMARY KEY (tx, id))
      WITH (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);
    CREATE INDEX job_events_staging_job ON herald.job_events_staging USING btree (job_id);
  END IF;
  IF d.last_tx IS NOT NULL THEN
    UPDATE herald.retention_horizon h SET tx = d.last_tx, event_id = d.last_id
    WHERE h.id = 1 AND (d.last_tx, d.last_id) > (h.tx, h.event_id);
  END IF;
  EXECUTE format('DROP TABLE %s', d.part);
  RETURN 1;
EXCEPTION WHEN lock_not_available THEN
  RETURN -1;
END $$;
--> statement-breakpoint

-- A kept partition that retention has thinned to `small` events or fewer: they go to
-- job_events_default (under the lock, as a small drop) and the partition goes. All its events are
-- below the retention horizon already. Returns 1, 0 (none that small) or -1 (busy).
CREATE FUNCTION herald.fold_kept_partition(lock_ms integer, small integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  p regclass;
  n bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(1213353028, 4) THEN RETURN -1; END IF;
  FOR p IN SELECT e.part FROM herald.event_partitions() e WHERE (SELECT c.relname FROM pg_class c WHERE c.oid = e.part) LIKE 'job\_events\_kept\_%' ORDER BY e.hi LOOP
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %s) s', p, small + 1) INTO n;
    IF n <= small THEN
      PERFORM set_config('lock_timeout', lock_ms || 'ms', true);
      EXECUTE format('ALTER TABLE herald.job_events DETACH PARTITION %s', p);
      EXECUTE format($q$
        INSERT INTO herald.job_events (id, job_id, tx, at, queue, kind, type, status, attempt, worker, data, flow_id)
        OVERRIDING SYSTEM VALUE
        SELECT e.id, e.job_id, e.tx, e.at, e.queue, e.kind, e.type, e.status, e.attempt, e.worker, e.data, e.flow_id
        FROM %s e ORDER BY e.tx, e.id$q$, p);
      EXECUTE format('DROP TABLE %s', p);
      RETURN 1;
    END IF;
  END LOOP;
  RETURN 0;
EXCEPTION WHEN lock_not_available THEN
  RETURN -1;
END $$;
--> statement-breakpoint

-- Maintainers from before this migration still call it during an upgrade: they find it busy and
-- leave the drops to the new ones (its copy into the default partition would break the staging).
CREATE OR REPLACE FUNCTION herald.drop_event_partition(cutoff timestamp with time zone, lock_ms integer) RETURNS integer
LANGUAGE sql AS $$ SELECT -1 $$;
