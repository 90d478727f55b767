-- Hand-written: the UPDATE trigger reads its transition tables once, with a join whose cost is
-- linear in the rows of the statement at hand.
--
-- Before, its three statements each joined old_jobs to new_jobs in a plan that PL/pgSQL caches for
-- the session. Transition tables have no statistics: a plan made during a one-row UPDATE (a
-- progress report, a claim of one job) is a nested loop, and later 500-row claims and completions
-- on that session kept it, paying 500 × 500 row comparisons (150-300 ms per statement instead of a
-- few). With nested loops off for this function only, every cached plan hashes the join, whatever
-- the size of the first call. (EXECUTE, planning on every call, also fixes it, but costs about
-- 1.5 ms per one-row statement on a busy 2-core machine: on the claim's path to a job's start.)
-- One join instead of three, too: the event rows, the wake-up NOTIFY and the cancel NOTIFY are all
-- read off the same joined set.
CREATE OR REPLACE FUNCTION herald.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off
AS $fn$
DECLARE
  notified bigint;
BEGIN
  WITH c AS MATERIALIZED (
    SELECT n.id, n.queue, n.kind, n.status, n.attempt, n.max_attempts, n.available_at,
           n.started_at, n.finished_at, n.lease_expires_at, n.progress, n.last_error,
           n.locked_by AS new_locked_by, n.cancel_requested_at,
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
               'runAt', CASE WHEN c.status = 'queued' THEN herald.iso_utc(c.available_at) END)
             WHEN 'retried' THEN jsonb_build_object('maxAttempts', c.max_attempts)
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
  -- A cancel request reaches the owning worker at once.
  cancel AS (
    SELECT pg_notify('herald_control', 'cancel ' || w.new_locked_by)
    FROM (SELECT DISTINCT c.new_locked_by FROM c
          WHERE c.status = 'running' AND c.cancel_requested_at IS NOT NULL
            AND c.old_cancel_requested_at IS NULL) w
  )
  SELECT (SELECT count(*) FROM wake) + (SELECT count(*) FROM cancel) INTO notified;
  RETURN NULL;
END $fn$;
