-- The insert path's triggers, cheaper per statement; what they write and wake is unchanged.
-- Measured by backend CPU per single-job INSERT (one session, PostgreSQL 15): the triggers
-- cost more than the row and its 12 indexes. The parts that went:
--
-- herald.iso_utc was IMMUTABLE over to_char, which is STABLE, so the planner never inlined it:
-- every statement that wrote an event parsed and planned its body again. STABLE, it is inlined.
ALTER FUNCTION herald.iso_utc(timestamptz) STABLE;
--> statement-breakpoint
-- Records that this transaction wakes the listeners of `targets` (distinct) when it commits;
-- returns how many it named unless all were recorded already. The first intent of a transaction
-- inserts its row (queuing herald.wake_intents_at_commit), after the targets are set: with SET
-- CONSTRAINTS ALL IMMEDIATE that trigger fires at the end of that INSERT, and must find them.
-- The row's place is recorded by the INSERT itself, before any trigger of it runs. One more
-- target (the usual later call) is appended without a query.
CREATE OR REPLACE FUNCTION herald.wake_at_commit(targets text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  pending text := current_setting('herald.wake_targets', true);
BEGIN
  IF targets IS NULL OR cardinality(targets) = 0 THEN RETURN 0; END IF;
  IF pending IS NULL OR pending = '' THEN
    PERFORM set_config('herald.wake_targets', targets::text, true);
    INSERT INTO herald.wake_intents DEFAULT VALUES RETURNING set_config('herald.wake_row', ctid::text, true) INTO pending;
    RETURN cardinality(targets);
  END IF;
  IF targets <@ pending::text[] THEN RETURN 0; END IF;
  pending := set_config('herald.wake_targets',
    CASE WHEN cardinality(targets) = 1 THEN pending::text[] || targets
         ELSE ARRAY(SELECT DISTINCT t FROM unnest(pending::text[] || targets) t) END::text, true);
  RETURN cardinality(targets);
END $$;
--> statement-breakpoint
-- At commit (deferred): every barrier shared, in key order; then each notifier tried, and the
-- NOTIFY sent only by the transaction that got it. Both locks are held until this one ends.
-- One or two targets (a queue, and the events) take their barriers in plain expressions.
CREATE OR REPLACE FUNCTION herald.wake_intents_at_commit() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  targets text[] := nullif(current_setting('herald.wake_targets', true), '')::text[];
  row_id text := coalesce(current_setting('herald.wake_row', true), '');
  k1 bigint;
  k2 bigint;
  k bigint;
  t text;
  done text;
BEGIN
  IF targets IS NULL THEN RETURN NULL; END IF;
  IF cardinality(targets) <= 2 THEN
    k1 := herald.wake_key(targets[1], 1);
    k2 := coalesce(herald.wake_key(targets[2], 1), k1);
    done := pg_advisory_xact_lock_shared(least(k1, k2))::text;
    IF k1 <> k2 THEN done := pg_advisory_xact_lock_shared(greatest(k1, k2))::text; END IF;
  ELSE
    FOR k IN SELECT DISTINCT herald.wake_key(u, 1) FROM unnest(targets) u ORDER BY 1 LOOP
      PERFORM pg_advisory_xact_lock_shared(k);
    END LOOP;
  END IF;
  FOREACH t IN ARRAY targets LOOP
    IF pg_try_advisory_xact_lock(herald.wake_key(t, 2)) THEN
      PERFORM pg_notify(split_part(t, ' ', 1), substr(t, length(split_part(t, ' ', 1)) + 2));
    END IF;
  END LOOP;
  -- By its place (a TID scan); a row of an older definition may lack it: by its tx.
  IF row_id <> '' THEN
    DELETE FROM herald.wake_intents WHERE ctid = row_id::tid;
  ELSE
    DELETE FROM herald.wake_intents WHERE tx = NEW.tx;
  END IF;
  done := set_config('herald.wake_targets', '', true) || set_config('herald.wake_row', '', true);
  RETURN NULL;
END $$;
--> statement-breakpoint
-- One trigger for a jobs INSERT: the wake-up, the `enqueued` events and the counts (the counts
-- had a trigger of their own: one more function call per statement). The wake-up is recorded
-- first and names herald_events too, so the events' own trigger (job_events_after_insert) finds
-- it recorded and does nothing more. A statement that inserted no row wakes nothing.
CREATE OR REPLACE FUNCTION herald.jobs_after_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  woken bigint;
BEGIN
  -- Runnable now: woken at commit, coalesced. Scheduled only: its time, sent as before (a worker
  -- sets a timer from it).
  WITH q AS (
    SELECT n.queue, bool_or(n.available_at <= now()) AS runnable, min(n.available_at) AS next_at
    FROM new_jobs n
    WHERE n.status = 'queued'
    GROUP BY n.queue
  )
  SELECT herald.wake_at_commit(ARRAY(SELECT 'herald_events' WHERE EXISTS (SELECT 1 FROM new_jobs))
                               || ARRAY(SELECT 'herald_jobs ' || q.queue FROM q WHERE q.runnable))
         + (SELECT count(pg_notify('herald_jobs', q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint))
            FROM q WHERE NOT q.runnable)
  INTO woken;

  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
  SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
         jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at), 'maxAttempts', n.max_attempts), n.flow_id
  FROM new_jobs n
  ORDER BY n.id;

  INSERT INTO herald.job_counts AS c (queue, status, minute, stripe, n)
  SELECT n.queue, n.status, herald.job_count_minute(n.status, n.available_at), 1 + pg_backend_pid() % 1024, count(*)
  FROM new_jobs n
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (queue, status, minute, stripe) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $function$;
--> statement-breakpoint
DROP TRIGGER jobs_counts_after_insert ON herald.jobs;
