-- Hand-written: the functions and triggers behind Herald's event log and wake-ups.
-- drizzle-kit owns the tables (0000_tables.sql); this file owns everything it cannot express.
--
-- Every trigger here fires once per STATEMENT, reading transition tables, never per row:
-- a claim of 500 jobs is one INSERT ... SELECT into job_events and at most one NOTIFY per
-- queue (DESIGN.md point 1: NOTIFY serialises commits on a database-wide lock).
--
-- Channels:
--   herald_jobs    payload 'QUEUE'          the queue gained work that is runnable now
--                  payload 'QUEUE EPOCH_MS' the queue gained work that becomes runnable then
--   herald_events  payload ''               job_events has new rows (merged per transaction)
--   herald_control payload 'cancel WORKER'  a job held by WORKER was asked to cancel

-- Queue tables churn: vacuum early and often, and leave room on pages for updates.
ALTER TABLE herald.jobs SET (
  fillfactor = 80,
  autovacuum_vacuum_scale_factor = 0.02,
  autovacuum_vacuum_threshold = 500,
  autovacuum_analyze_scale_factor = 0.05,
  autovacuum_vacuum_cost_delay = 0
);
--> statement-breakpoint
ALTER TABLE herald.job_events SET (
  autovacuum_vacuum_scale_factor = 0.05,
  autovacuum_analyze_scale_factor = 0.05
);
--> statement-breakpoint

CREATE FUNCTION herald.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data)
  SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
         jsonb_build_object('priority', n.priority, 'runAt', n.available_at)
  FROM new_jobs n
  ORDER BY n.id;

  PERFORM pg_notify('herald_jobs',
            CASE WHEN q.runnable THEN q.queue
                 ELSE q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint END)
  FROM (SELECT n.queue,
               bool_or(n.available_at <= now()) AS runnable,
               min(n.available_at) AS next_at
        FROM new_jobs n
        WHERE n.status = 'queued'
        GROUP BY n.queue) q;
  RETURN NULL;
END $$;
--> statement-breakpoint

CREATE FUNCTION herald.jobs_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- One event per row whose status, progress or cancel request changed. The event type is
  -- read off the transition; the reaper marks its work with last_error.reason.
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data)
  SELECT c.id, c.queue, c.kind, c.type::herald.event_type, c.status, c.attempt, c.worker,
         CASE c.type
           WHEN 'claimed' THEN jsonb_build_object(
             'leaseExpiresAt', c.lease_expires_at,
             'lagMs', round(extract(epoch FROM (c.started_at - c.old_available_at)) * 1000))
           WHEN 'progress' THEN c.progress
           WHEN 'succeeded' THEN jsonb_build_object(
             'durationMs', round(extract(epoch FROM (c.finished_at - c.started_at)) * 1000))
           WHEN 'retry_scheduled' THEN jsonb_build_object('error', c.last_error->>'message', 'runAt', c.available_at)
           WHEN 'failed' THEN jsonb_build_object('error', c.last_error->>'message')
           WHEN 'lease_expired' THEN jsonb_build_object(
             'reason', c.last_error->>'reason',
             'runAt', CASE WHEN c.status = 'queued' THEN c.available_at END)
           WHEN 'retried' THEN jsonb_build_object('maxAttempts', c.max_attempts)
         END
  FROM (
    SELECT n.*, o.available_at AS old_available_at,
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
  ) c
  WHERE c.type IS NOT NULL
  ORDER BY c.id;

  -- Work that became runnable now (new attempt, manual retry, reaped lease) wakes workers.
  PERFORM pg_notify('herald_jobs',
            CASE WHEN q.runnable THEN q.queue
                 ELSE q.queue || ' ' || ceil(extract(epoch FROM q.next_at) * 1000)::bigint END)
  FROM (SELECT n.queue,
               bool_or(n.available_at <= now()) AS runnable,
               min(n.available_at) AS next_at
        FROM old_jobs o JOIN new_jobs n ON n.id = o.id
        WHERE n.status = 'queued' AND o.status <> 'queued'
        GROUP BY n.queue) q;

  -- A cancel request reaches the owning worker at once.
  PERFORM pg_notify('herald_control', 'cancel ' || w.locked_by)
  FROM (SELECT DISTINCT n.locked_by
        FROM old_jobs o JOIN new_jobs n ON n.id = o.id
        WHERE n.status = 'running' AND n.cancel_requested_at IS NOT NULL
          AND o.cancel_requested_at IS NULL) w;
  RETURN NULL;
END $$;
--> statement-breakpoint

-- A tick, not a payload: the server's tailer reads the rows itself (below the horizon).
-- Empty payloads merge within a transaction; zero-row statements send nothing.
CREATE FUNCTION herald.job_events_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM new_events) THEN
    PERFORM pg_notify('herald_events', '');
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint

CREATE TRIGGER jobs_after_insert AFTER INSERT ON herald.jobs
  REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_after_insert();
--> statement-breakpoint
CREATE TRIGGER jobs_after_update AFTER UPDATE ON herald.jobs
  REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_after_update();
--> statement-breakpoint
CREATE TRIGGER job_events_after_insert AFTER INSERT ON herald.job_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION herald.job_events_after_insert();
