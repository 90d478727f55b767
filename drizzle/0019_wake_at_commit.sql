-- Coalesced wake-ups. PostgreSQL commits the transactions that sent a NOTIFY one at a time (one
-- database-wide lock, held through the WAL flush), so a NOTIFY in every producing transaction
-- caps producers at the disk's flush rate. The triggers now only record what a transaction
-- would wake ("herald_jobs QUEUE", "herald_events"; herald.wake_at_commit), and decide at commit:
-- the first committing transaction of a target sends the NOTIFY, the ones committing alongside
-- it skip theirs (herald.wake_intents_at_commit). Payloads and channels are unchanged. Scheduled
-- payloads ("QUEUE EPOCH_MS") and herald_control are sent as before.
--
-- Why no wake-up is lost. Per target there are two advisory locks: a barrier and a notifier.
-- At commit a transaction T takes the barrier SHARED, then tries the notifier: T notifies only if
-- it got it. T2 skips only while T1 holds the notifier, i.e. before T1 has ended; T2 already holds
-- the barrier. A consumer that hears T1's notification (so after T1 committed) takes the barrier
-- EXCLUSIVE in a statement of its own before it reads (herald.pass_wake_barriers): that waits for
-- T2 to end, and locks are released after a commit is visible, so its next statement sees T2's
-- rows. Barriers are taken in key order by both sides, so producers and consumers never deadlock.
-- Deciding at commit matters: a long transaction never holds the right to notify, and an aborted
-- one never swallows others' wake-ups (a rolled-back intent fires nothing).
--
-- What can still be lost: a commit that fails after this trigger ran (a later deferred
-- constraint, a serialization failure at commit) drops a notification others skipped for. The
-- worker's poll (HERALD_POLL_MS) and the server tailer's safety read recover it.
--
-- One row per transaction in this unlogged table only serves to queue the commit-time trigger;
-- the trigger deletes it, so the table stays empty. The targets live in a transaction-local
-- setting (herald.wake_targets), which a rolled-back savepoint rolls back with the row.
CREATE UNLOGGED TABLE herald.wake_intents (tx xid8 NOT NULL DEFAULT pg_current_xact_id());
--> statement-breakpoint
-- The 64-bit advisory key of a target's barrier (role 1) or notifier (role 2). Per queue, so two
-- queues never share a notifier (a shared one would drop one queue's wake-up). The one-bigint
-- form never meets Herald's (namespace, key) locks in pg_locks (objsubid 1, not 2).
CREATE FUNCTION herald.wake_key(target text, role integer) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN hashtextextended(target, role);
--> statement-breakpoint
-- Records that this transaction wakes the listeners of `targets` (distinct) when it commits;
-- returns how many it named unless all were recorded already. The first intent of a transaction
-- inserts its row (queuing the trigger below), after the targets are set: with SET CONSTRAINTS
-- ALL IMMEDIATE the trigger fires at the end of that INSERT, and must find them.
CREATE FUNCTION herald.wake_at_commit(targets text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  pending text := current_setting('herald.wake_targets', true);
  row_id tid;
BEGIN
  -- Runs in most statements that write jobs or events: plain expressions only on the usual paths.
  IF targets IS NULL OR cardinality(targets) = 0 THEN RETURN 0; END IF;
  IF pending IS NULL OR pending = '' THEN
    PERFORM set_config('herald.wake_targets', targets::text, true);
    INSERT INTO herald.wake_intents DEFAULT VALUES RETURNING ctid INTO row_id;
    -- Set unless the trigger already ran and deleted the row (immediate mode).
    IF current_setting('herald.wake_targets') <> '' THEN
      PERFORM set_config('herald.wake_row', row_id::text, true);
    END IF;
    RETURN cardinality(targets);
  END IF;
  IF targets <@ pending::text[] THEN RETURN 0; END IF;
  PERFORM set_config('herald.wake_targets', ARRAY(SELECT DISTINCT t FROM unnest(pending::text[] || targets) t)::text, true);
  RETURN cardinality(targets);
END $$;
--> statement-breakpoint
-- At commit (deferred): every barrier shared, in key order; then each notifier tried, and the
-- NOTIFY sent only by the transaction that got it. Both locks are held until this one ends.
CREATE FUNCTION herald.wake_intents_at_commit() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  targets text[] := nullif(current_setting('herald.wake_targets', true), '')::text[];
  k bigint;
  t text;
BEGIN
  IF targets IS NULL THEN RETURN NULL; END IF;
  FOR k IN SELECT DISTINCT herald.wake_key(u, 1) FROM unnest(targets) u ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock_shared(k);
  END LOOP;
  FOREACH t IN ARRAY targets LOOP
    IF pg_try_advisory_xact_lock(herald.wake_key(t, 2)) THEN
      PERFORM pg_notify(split_part(t, ' ', 1), substr(t, length(split_part(t, ' ', 1)) + 2));
    END IF;
  END LOOP;
  -- By its place (a TID scan); in immediate mode the row's place is not recorded yet: by its tx.
  IF coalesce(current_setting('herald.wake_row', true), '') <> '' THEN
    DELETE FROM herald.wake_intents WHERE ctid = current_setting('herald.wake_row')::tid;
  ELSE
    DELETE FROM herald.wake_intents WHERE tx = NEW.tx;
  END IF;
  PERFORM set_config('herald.wake_targets', '', true);
  PERFORM set_config('herald.wake_row', '', true);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER wake_intents_at_commit AFTER INSERT ON herald.wake_intents
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION herald.wake_intents_at_commit();
--> statement-breakpoint
-- A consumer woken by a notification of `targets` calls this in a statement of its own before it
-- reads: it returns once every transaction that skipped its NOTIFY for them has ended. Exclusive
-- barriers, one after another in key order (as producers take them), released when the statement
-- ends. A transaction holds its shared barrier only through its commit, unless it ran SET
-- CONSTRAINTS ALL IMMEDIATE or PREPAREd: `timeout_ms` bounds the wait (false: gave up; the
-- consumer's safety read covers it).
CREATE FUNCTION herald.pass_wake_barriers(targets text[], timeout_ms integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  PERFORM set_config('lock_timeout', timeout_ms::text, true);
  FOR k IN SELECT DISTINCT herald.wake_key(u, 1) FROM unnest(targets) u ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(k);
  END LOOP;
  RETURN true;
EXCEPTION WHEN lock_not_available THEN
  RETURN false;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herald.jobs_after_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  woken bigint;
BEGIN
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
  SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
         jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at), 'maxAttempts', n.max_attempts), n.flow_id
  FROM new_jobs n
  ORDER BY n.id;

  -- Runnable now: woken at commit, coalesced. Scheduled only: its time, sent as before (a worker
  -- sets a timer from it).
  WITH q AS (
    SELECT n.queue, bool_or(n.available_at <= now()) AS runnable, min(n.available_at) AS next_at
    FROM new_jobs n
    WHERE n.status = 'queued'
    GROUP BY n.queue
  )
  SELECT herald.wake_at_commit(ARRAY(SELECT 'herald_jobs ' || q.queue FROM q WHERE q.runnable))
         + (SELECT count(pg_notify('herald_jobs', q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint))
            FROM q WHERE NOT q.runnable)
  INTO woken;
  RETURN NULL;
END $function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herald.job_events_after_insert()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF EXISTS (SELECT 1 FROM new_events) THEN
    PERFORM herald.wake_at_commit('{herald_events}');
  END IF;
  RETURN NULL;
END $function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herald.jobs_after_update()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_nestloop TO 'off'
AS $function$
DECLARE
  notified bigint;
  finished bigint[];
  reopened bigint[];
  reblocked bigint[];
BEGIN
  WITH c AS MATERIALIZED (
    SELECT n.id, n.queue, n.kind, n.status, n.attempt, n.max_attempts, n.available_at,
           n.started_at, n.finished_at, n.lease_expires_at, n.progress, n.last_error,
           n.locked_by AS new_locked_by, n.cancel_requested_at, n.expire_at, n.flow_id, n.has_children,
           o.status AS old_status, o.cancel_requested_at AS old_cancel_requested_at, o.available_at AS old_available_at,
           o.last_error AS old_last_error,
           -- The whole row of a job that just failed for good, for its dead-letter copy; null
           -- on every other row, so the common statements carry nothing more.
           CASE WHEN n.status = 'failed' AND o.status <> 'failed' THEN n::herald.jobs END AS failed_row,
           CASE WHEN n.status = 'running' THEN n.locked_by ELSE o.locked_by END AS worker,
           CASE
             WHEN n.status = o.status THEN
               CASE
                 WHEN n.status = 'running' AND n.cancel_requested_at IS NOT NULL
                      AND o.cancel_requested_at IS NULL THEN 'cancel_requested'
                 WHEN n.status = 'running' AND n.progress IS DISTINCT FROM o.progress THEN 'progress'
               END
             WHEN n.status = 'running' THEN 'claimed'
             WHEN o.status = 'blocked' AND n.status = 'queued' THEN 'unblocked'
             WHEN n.status = 'succeeded' THEN 'succeeded'
             WHEN n.status = 'cancelled' AND o.status = 'queued' AND n.last_error->>'reason' = 'expired'
                  AND n.last_error IS DISTINCT FROM o.last_error THEN 'expired'
             WHEN n.status = 'cancelled' THEN 'cancelled'
             -- Shutdown hands a job back without burning the attempt.
             WHEN o.status = 'running' AND n.status = 'queued' AND n.attempt < o.attempt THEN 'released'
             WHEN o.status = 'running' AND n.last_error ? 'reason' THEN 'lease_expired'
             WHEN n.status = 'failed' THEN 'failed'
             WHEN o.status = 'running' THEN 'retry_scheduled'
             ELSE 'retried'
           END AS type
    FROM old_jobs o JOIN new_jobs n ON n.id = o.id
  ),
  -- A job that failed for good in a queue with a dead-letter queue leaves a copy there, in this
  -- transaction. A copy is never copied again, so queues pointing at each other cannot loop.
  dead AS (
    INSERT INTO herald.jobs (queue, kind, payload, priority, max_attempts, requires, "group", tags, timeout_ms,
                             dead_letter_of, source_queue, trace)
    SELECT s.dead_letter, (c.failed_row).kind, (c.failed_row).payload, (c.failed_row).priority,
           (c.failed_row).max_attempts, (c.failed_row).requires, (c.failed_row)."group", (c.failed_row).tags,
           (c.failed_row).timeout_ms, c.id, c.queue, (c.failed_row).trace
    FROM c JOIN herald.queues s ON s.queue = c.queue
    WHERE c.status = 'failed' AND c.old_status <> 'failed' AND s.dead_letter IS NOT NULL AND (c.failed_row).dead_letter_of IS NULL
    ORDER BY c.id
    RETURNING id, queue, dead_letter_of
  ),
  -- One event per row whose status, progress or cancel request changed. The event type is read
  -- off the transition; the reaper marks its work with last_error.reason.
  events AS (
    INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
    SELECT c.id, c.queue, c.kind, c.type::herald.event_type, c.status, c.attempt, c.worker,
           CASE c.type
             WHEN 'claimed' THEN jsonb_build_object(
               'leaseExpiresAt', herald.iso_utc(c.lease_expires_at),
               'lagMs', round(extract(epoch FROM (c.started_at - c.old_available_at)) * 1000))
             WHEN 'progress' THEN c.progress
             WHEN 'succeeded' THEN jsonb_build_object(
               'durationMs', round(extract(epoch FROM (c.finished_at - c.started_at)) * 1000))
             WHEN 'retry_scheduled' THEN jsonb_build_object('error', c.last_error->>'message', 'runAt', herald.iso_utc(c.available_at))
             WHEN 'failed' THEN jsonb_build_object('error', c.last_error->>'message') || coalesce((SELECT jsonb_build_object('deadLetter', jsonb_build_object('queue', d.queue, 'jobId', d.id::text))
                                 FROM dead d WHERE d.dead_letter_of = c.id), '{}'::jsonb)
             WHEN 'lease_expired' THEN jsonb_build_object(
               'reason', c.last_error->>'reason',
               'error', c.last_error->>'message',
               'runAt', CASE WHEN c.status = 'queued' THEN herald.iso_utc(c.available_at) END)
               || CASE WHEN c.status = 'failed' THEN coalesce((SELECT jsonb_build_object('deadLetter', jsonb_build_object('queue', d.queue, 'jobId', d.id::text))
                                 FROM dead d WHERE d.dead_letter_of = c.id), '{}'::jsonb) ELSE '{}'::jsonb END
             WHEN 'retried' THEN jsonb_build_object('maxAttempts', c.max_attempts)
             WHEN 'expired' THEN jsonb_build_object('expireAt', herald.iso_utc(c.expire_at))
             WHEN 'cancelled' THEN CASE WHEN c.old_status = 'blocked' AND c.last_error->>'reason' = 'dependency_failed'
                                             AND c.last_error IS DISTINCT FROM c.old_last_error
               THEN jsonb_build_object('reason', 'dependency_failed', 'parent', c.last_error->'parent') END
           END,
           c.flow_id
    FROM c
    WHERE c.type IS NOT NULL
    ORDER BY c.id
  ),
  -- Work that became runnable now (new attempt, manual retry, reaped lease, unblocked) wakes workers:
  -- runnable at once through herald.wake_at_commit, scheduled later with its time (below).
  wake AS (
    SELECT c.queue, bool_or(c.available_at <= now()) AS runnable, min(c.available_at) AS next_at
    FROM c
    WHERE c.status = 'queued' AND c.old_status <> 'queued'
    GROUP BY c.queue
  ),
  -- A job of a paused or limited queue stopped running: its slot may let a waiting job start on
  -- any worker. The gate row lists those queues (empty when no queue has settings).
  freed AS (
    SELECT DISTINCT c.queue FROM c
    WHERE c.old_status = 'running' AND c.status <> 'running'
      AND c.queue = ANY((SELECT held FROM herald.queue_gate WHERE id = 1)::text[])
  ),
  -- A cancel request reaches the owning worker at once.
  cancel AS (
    SELECT pg_notify('herald_control', 'cancel ' || w.new_locked_by)
    FROM (SELECT DISTINCT c.new_locked_by FROM c
          WHERE c.status = 'running' AND c.cancel_requested_at IS NOT NULL
            AND c.old_cancel_requested_at IS NULL) w
  ),
  -- Rows the flow work needs (none outside workflows): parents that finished or run again, and
  -- jobs with parents that wait again.
  flow AS (
    SELECT array_agg(c.id) FILTER (WHERE c.has_children AND c.status IN ('succeeded', 'failed', 'cancelled')
                                     AND c.old_status NOT IN ('succeeded', 'failed', 'cancelled')) AS finished,
           array_agg(c.id) FILTER (WHERE c.has_children AND c.old_status IN ('succeeded', 'failed', 'cancelled')
                                     AND c.status NOT IN ('succeeded', 'failed', 'cancelled')) AS reopened,
           array_agg(c.id) FILTER (WHERE c.status = 'blocked' AND c.old_status <> 'blocked') AS reblocked
    FROM c
    WHERE c.has_children OR c.status = 'blocked'
  )
  SELECT (SELECT count(pg_notify('herald_jobs', w.queue || ' ' || ceil(extract(epoch FROM w.next_at) * 1000)::bigint))
          FROM wake w WHERE NOT w.runnable)
         + (SELECT count(*) FROM cancel)
         + herald.wake_at_commit(ARRAY(SELECT 'herald_jobs ' || w.queue FROM wake w WHERE w.runnable
                                       UNION SELECT 'herald_jobs ' || f.queue FROM freed f)),
         flow.finished, flow.reopened, flow.reblocked
  INTO notified, finished, reopened, reblocked
  FROM flow;
  IF finished IS NOT NULL OR reopened IS NOT NULL OR reblocked IS NOT NULL THEN
    PERFORM herald.flow_after_update(finished, reopened, reblocked);
  END IF;
  RETURN NULL;
END $function$;
