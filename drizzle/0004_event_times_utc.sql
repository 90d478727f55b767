-- Event data times (runAt, leaseExpiresAt) in the same form as every other time the API gives:
-- ISO 8601 in UTC with milliseconds and a Z ("2026-01-02T03:04:05.678Z", what JavaScript's
-- toISOString() writes). to_jsonb(timestamptz) wrote PostgreSQL's own form instead, with
-- microseconds and the session's UTC offset ("2026-01-02 03:04:05.678901+00" style).
-- The two trigger functions are replaced with the same bodies, the times formatted; events
-- stored before this migration are rewritten to the new form.
CREATE FUNCTION herald.iso_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION herald.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data)
  SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
         jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at))
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

CREATE OR REPLACE FUNCTION herald.jobs_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- One event per row whose status, progress or cancel request changed. The event type is
  -- read off the transition; the reaper marks its work with last_error.reason.
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

UPDATE herald.job_events e
SET data = e.data
  || CASE WHEN jsonb_typeof(e.data->'runAt') = 'string'
          THEN jsonb_build_object('runAt', herald.iso_utc((e.data->>'runAt')::timestamptz)) ELSE '{}' END
  || CASE WHEN jsonb_typeof(e.data->'leaseExpiresAt') = 'string'
          THEN jsonb_build_object('leaseExpiresAt', herald.iso_utc((e.data->>'leaseExpiresAt')::timestamptz)) ELSE '{}' END
WHERE jsonb_typeof(e.data) = 'object'
  AND (jsonb_typeof(e.data->'runAt') = 'string' OR jsonb_typeof(e.data->'leaseExpiresAt') = 'string');
