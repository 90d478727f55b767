-- Hand-written: the triggers behind queue settings, schedules and the job events added with them
-- (0009_queue_control.sql made the tables). Statement-level, like 0001_triggers.sql.
--
-- Channels (besides those of 0001):
--   herald_control payload 'queues'     queue settings changed: workers re-read them (a resume wakes them)
--   herald_control payload 'schedules'  schedules changed: schedulers re-read the next due time
--   herald_jobs    payload 'QUEUE'      also when a running job of a limited queue stops: a slot freed

INSERT INTO herald.queue_gate (id, held) VALUES (1, '{}') ON CONFLICT DO NOTHING;
--> statement-breakpoint

-- The gate row lists every queue that is paused or has a limit. Updating it in the settings
-- change's own transaction is what makes a change wait for plain claims in flight (they hold
-- the row FOR SHARE), and what the next plain claim reads.
CREATE FUNCTION herald.queues_after_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE herald.queue_gate
  SET held = coalesce((SELECT array_agg(queue ORDER BY queue) FROM herald.queues
                       WHERE paused OR concurrency IS NOT NULL OR group_concurrency IS NOT NULL
                          OR rate_count IS NOT NULL), '{}')
  WHERE id = 1;
  PERFORM pg_notify('herald_control', 'queues');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER queues_after_change AFTER INSERT OR UPDATE OR DELETE ON herald.queues
  FOR EACH STATEMENT EXECUTE FUNCTION herald.queues_after_change();
--> statement-breakpoint

CREATE FUNCTION herald.schedules_after_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('herald_control', 'schedules');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER schedules_after_change AFTER INSERT OR UPDATE OR DELETE ON herald.schedules
  FOR EACH STATEMENT EXECUTE FUNCTION herald.schedules_after_change();
--> statement-breakpoint

-- The function as 0005_update_trigger_plans.sql left it, plus: the 'expired' event (a queued
-- job the expiry pass cancelled: its last_error.reason became 'expired'), the error message on
-- 'lease_expired' (a reaped attempt that ran past its timeout says so), and a wake-up when a
-- paused or limited queue frees a slot.
CREATE OR REPLACE FUNCTION herald.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off
AS $fn$
DECLARE
  notified bigint;
BEGIN
  WITH c AS MATERIALIZED (
    SELECT n.id, n.queue, n.kind, n.status, n.attempt, n.max_attempts, n.available_at,
           n.started_at, n.finished_at, n.lease_expires_at, n.progress, n.last_error,
           n.locked_by AS new_locked_by, n.cancel_requested_at, n.expire_at,
           o.status AS old_status, o.cancel_requested_at AS old_cancel_requested_at, o.available_at AS old_available_at,
           CASE WHEN n.status = 'running' THEN n.locked_by ELSE o.locked_by END AS worker,
           CASE
             WHEN n.status = o.status THEN
               CASE
                 WHEN n.status = 'running' AND n.cancel_requested_at IS NOT NULL
                      AND o.cancel_requested_at IS NULL THEN 'cancel_requested'
                 WHEN n.status = 'running' AND n.progress IS DISTINCT FROM o.progress THEN 'progress'
               END
             WHEN n.status = 'running' THEN 'claimed'
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
  -- One event per row whose status, progress or cancel request changed. The event type is read
  -- off the transition; the reaper marks its work with last_error.reason.
  events AS (
    INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data)
    SELECT c.id, c.queue, c.kind, c.type::herald.event_type, c.status, c.attempt, c.worker,
           CASE c.type
             WHEN 'claimed' THEN jsonb_build_object(
               'leaseExpiresAt', herald.iso_utc(c.lease_expires_at),
               'lagMs', round(extract(epoch FROM (c.started_at - c.old_available_at)) * 1000))
             WHEN 'progress' THEN c.progress
             WHEN 'succeeded' THEN jsonb_build_object(
               'durationMs', round(extract(epoch FROM (c.finished_at - c.started_at)) * 1000))
             WHEN 'retry_scheduled' THEN jsonb_build_object('error', c.last_error->>'message', 'runAt', herald.iso_utc(c.available_at))
             WHEN 'failed' THEN jsonb_build_object('error', c.last_error->>'message')
             WHEN 'lease_expired' THEN jsonb_build_object(
               'reason', c.last_error->>'reason',
               'error', c.last_error->>'message',
               'runAt', CASE WHEN c.status = 'queued' THEN herald.iso_utc(c.available_at) END)
             WHEN 'retried' THEN jsonb_build_object('maxAttempts', c.max_attempts)
             WHEN 'expired' THEN jsonb_build_object('expireAt', herald.iso_utc(c.expire_at))
           END
    FROM c
    WHERE c.type IS NOT NULL
    ORDER BY c.id
  ),
  -- Work that became runnable now (new attempt, manual retry, reaped lease) wakes workers.
  wake AS (
    SELECT pg_notify('herald_jobs',
             CASE WHEN q.runnable THEN q.queue
                  ELSE q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint END)
    FROM (SELECT c.queue, bool_or(c.available_at <= now()) AS runnable, min(c.available_at) AS next_at
          FROM c
          WHERE c.status = 'queued' AND c.old_status <> 'queued'
          GROUP BY c.queue) q
  ),
  -- A job of a paused or limited queue stopped running: its slot may let a waiting job start on
  -- any worker. The gate row lists those queues (empty when no queue has settings).
  freed AS (
    SELECT pg_notify('herald_jobs', q.queue)
    FROM (SELECT DISTINCT c.queue FROM c WHERE c.old_status = 'running' AND c.status <> 'running') q
    WHERE q.queue = ANY((SELECT held FROM herald.queue_gate WHERE id = 1)::text[])
  ),
  -- A cancel request reaches the owning worker at once.
  cancel AS (
    SELECT pg_notify('herald_control', 'cancel ' || w.new_locked_by)
    FROM (SELECT DISTINCT c.new_locked_by FROM c
          WHERE c.status = 'running' AND c.cancel_requested_at IS NOT NULL
            AND c.old_cancel_requested_at IS NULL) w
  )
  SELECT (SELECT count(*) FROM wake) + (SELECT count(*) FROM freed) + (SELECT count(*) FROM cancel) INTO notified;
  RETURN NULL;
END $fn$;
