-- A single-job enqueue costs less PostgreSQL CPU; what it writes and wakes is unchanged (the
-- same events, counts, targets and NOTIFY payloads as 0022). Measured by instructions per
-- single-job INSERT (callgrind, one backend): a statement's cost is mostly building its plan's
-- nodes at each execution, so the usual case runs fewer of them.
--
-- herald.jobs_after_insert counts the rows first. One row: the wake-up, the `enqueued` event and
-- the count in one statement, without the grouping and sorting a batch needs. Several: the three
-- parts in one statement instead of three.
CREATE OR REPLACE FUNCTION herald.jobs_after_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  inserted bigint;
  woken bigint;
BEGIN
  SELECT count(*) INTO inserted FROM new_jobs;
  IF inserted = 0 THEN RETURN NULL; END IF;
  -- One job (the usual enqueue): the same writes and wake-up in one statement with no grouping or
  -- sorting. The wake-up is recorded first (the main query runs before the inserts), so the
  -- events' trigger finds herald_events recorded.
  IF inserted = 1 THEN
    WITH e AS (
      INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
      SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
             jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at), 'maxAttempts', n.max_attempts), n.flow_id
      FROM new_jobs n
    ),
    c AS (
      INSERT INTO herald.job_counts AS c (queue, status, minute, stripe, n)
      SELECT n.queue, n.status, herald.job_count_minute(n.status, n.available_at), 1 + pg_backend_pid() % 1024, 1
      FROM new_jobs n
      ON CONFLICT (queue, status, minute, stripe) DO UPDATE SET n = c.n + excluded.n
    )
    SELECT herald.wake_at_commit(CASE WHEN n.status = 'queued' AND n.available_at <= now()
                                      THEN ARRAY['herald_events', 'herald_jobs ' || n.queue] ELSE '{herald_events}' END)
           + CASE WHEN n.status = 'queued' AND n.available_at > now()
                  THEN num_nonnulls(pg_notify('herald_jobs', n.queue || ' ' || ceil(extract(epoch FROM n.available_at) * 1000)::bigint)) ELSE 0 END
    INTO woken
    FROM new_jobs n;
    RETURN NULL;
  END IF;

  -- Many: runnable queues woken at commit, coalesced; scheduled only: its time, sent as before (a
  -- worker sets a timer from it). Events in id order, counts grouped.
  WITH q AS (
    SELECT n.queue, bool_or(n.available_at <= now()) AS runnable, min(n.available_at) AS next_at
    FROM new_jobs n
    WHERE n.status = 'queued'
    GROUP BY n.queue
  ),
  e AS (
    INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
    SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
           jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at), 'maxAttempts', n.max_attempts), n.flow_id
    FROM new_jobs n
    ORDER BY n.id
  ),
  c AS (
    INSERT INTO herald.job_counts AS c (queue, status, minute, stripe, n)
    SELECT n.queue, n.status, herald.job_count_minute(n.status, n.available_at), 1 + pg_backend_pid() % 1024, count(*)
    FROM new_jobs n
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
    ON CONFLICT (queue, status, minute, stripe) DO UPDATE SET n = c.n + excluded.n
  )
  SELECT herald.wake_at_commit(ARRAY['herald_events'] || ARRAY(SELECT 'herald_jobs ' || q.queue FROM q WHERE q.runnable))
         + (SELECT count(pg_notify('herald_jobs', q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint))
            FROM q WHERE NOT q.runnable)
  INTO woken;
  RETURN NULL;
END $function$;
--> statement-breakpoint
-- A jobs INSERT records herald_events before it writes its events: the events' own trigger then
-- returns at once, instead of reading its transition table and calling herald.wake_at_commit.
CREATE OR REPLACE FUNCTION herald.job_events_after_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  -- Recorded already (a jobs INSERT names it first): a plain expression, no query.
  IF 'herald_events' = ANY (nullif(current_setting('herald.wake_targets', true), '')::text[]) THEN RETURN NULL; END IF;
  IF EXISTS (SELECT 1 FROM new_events) THEN
    PERFORM herald.wake_at_commit('{herald_events}');
  END IF;
  RETURN NULL;
END $function$;
--> statement-breakpoint
-- At commit (deferred): the NOTIFY is sent by an assignment, not a PERFORM query.
CREATE OR REPLACE FUNCTION herald.wake_intents_at_commit()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
      -- An assignment, not PERFORM: a plain expression, no query.
      done := pg_notify(split_part(t, ' ', 1), substr(t, length(split_part(t, ' ', 1)) + 2))::text;
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
END $function$;
