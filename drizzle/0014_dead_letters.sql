ALTER TABLE "herald"."jobs" ADD COLUMN "dead_letter_of" bigint;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "source_queue" text;--> statement-breakpoint
ALTER TABLE "herald"."jobs" ADD COLUMN "trace" text;--> statement-breakpoint
ALTER TABLE "herald"."queues" ADD COLUMN "dead_letter" text;--> statement-breakpoint
CREATE INDEX "jobs_queued_queue" ON "herald"."jobs" USING btree ("queue","available_at") WHERE "herald"."jobs"."status" = 'queued';--> statement-breakpoint
ALTER TABLE "herald"."queues" ADD CONSTRAINT "queues_dead_letter_name" CHECK ("herald"."queues"."dead_letter" ~ '^[A-Za-z0-9_.:-]{1,128}$' AND "herald"."queues"."dead_letter" <> "herald"."queues"."queue");--> statement-breakpoint
-- Hand-written: the function as 0010_control_triggers.sql left it, plus dead letters. A job that
-- fails for good (worker failure, final timeout, or the reaper's last lease expiry: every path
-- ends in this trigger) is copied into its queue's dead-letter queue by the same statement, and
-- the event that records the failure names the copy (data.deadLetter {queue, jobId}).
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
