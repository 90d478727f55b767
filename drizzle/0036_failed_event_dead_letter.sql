-- Hand-written: a failed event names its dead-letter copy by a lookup in a jsonb value made with
-- the copies, instead of a correlated subquery in the events' data. The subquery ran only for
-- failed jobs of queues with a dead-letter queue, but its presence cost every claim and outcome
-- about 2 µs a job (bench/claim-levers.ts: 53.7 µs of backend CPU per claim and outcome before,
-- 49.9 after). The events, their data and the copies are the same as before.
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
  returned bigint[];
  dead_of bigint[];
  dead_ids bigint[];
  dead_queues text[];
  dead_letters jsonb;
BEGIN
  -- A job that failed for good in a queue with a dead-letter queue leaves a copy there, in this
  -- transaction. A copy is never copied again, so queues pointing at each other cannot loop.
  -- Only a statement in which a job failed for good inserts: an INSERT fires the statement
  -- triggers of jobs even when it inserts no row, which every claim, outcome and renewal paid.
  -- The copies' ids are drawn first, so that each failed event names its copy; the copies are
  -- inserted after the events, as before.
  IF EXISTS (SELECT 1 FROM old_jobs o JOIN new_jobs n ON n.id = o.id
             WHERE n.status = 'failed' AND o.status <> 'failed' AND n.dead_letter_of IS NULL) THEN
    SELECT array_agg(f.id ORDER BY f.copy), array_agg(f.copy ORDER BY f.copy), array_agg(f.dead_letter ORDER BY f.copy)
    INTO dead_of, dead_ids, dead_queues
    FROM (SELECT s.id, s.dead_letter, nextval(pg_get_serial_sequence('herald.jobs', 'id')) AS copy
          FROM (SELECT n.id, q.dead_letter
                FROM old_jobs o JOIN new_jobs n ON n.id = o.id JOIN herald.queues q ON q.queue = n.queue
                WHERE n.status = 'failed' AND o.status <> 'failed' AND q.dead_letter IS NOT NULL AND n.dead_letter_of IS NULL
                ORDER BY n.id) s) f;
    -- Each failed event's deadLetter, by source id: a value the events below look up, not a
    -- subquery, which cost every claim and outcome about 2 µs a job even though none ran it.
    dead_letters := (SELECT jsonb_object_agg(d.src::text, jsonb_build_object('queue', d.queue, 'jobId', d.id::text))
                     FROM unnest(dead_of, dead_ids, dead_queues) AS d(src, id, queue));
  END IF;
  WITH c AS MATERIALIZED (
    SELECT n.id, n.queue, n.kind, n.status, n.attempt, n.max_attempts, n.available_at,
           n.started_at, n.finished_at, n.lease_expires_at, n.progress, n.last_error,
           n.locked_by AS new_locked_by, n.cancel_requested_at, n.expire_at, n.flow_id, n.has_children,
           n.wait, o.wait AS old_wait, n.invoked_by,
           o.status AS old_status, o.cancel_requested_at AS old_cancel_requested_at, o.available_at AS old_available_at,
           o.last_error AS old_last_error,
           CASE WHEN n.status = 'running' THEN n.locked_by ELSE o.locked_by END AS worker,
           CASE
             WHEN n.status = o.status THEN
               CASE
                 WHEN n.status = 'running' AND n.cancel_requested_at IS NOT NULL
                      AND o.cancel_requested_at IS NULL THEN 'cancel_requested'
                 WHEN n.status = 'running' AND n.progress IS DISTINCT FROM o.progress THEN 'progress'
                 WHEN n.status = 'running' AND o.wait IS NOT NULL AND n.wait IS NULL THEN 'resumed'
                 WHEN n.status = 'queued' AND n.wait IS NULL AND o.wait IS NULL
                      AND o.available_at > now() AND n.available_at <= now() THEN 'promoted'
               END
             WHEN n.status = 'running' THEN 'claimed'
             WHEN o.status = 'blocked' AND n.status = 'queued' THEN 'unblocked'
             WHEN n.status = 'succeeded' THEN 'succeeded'
             WHEN n.status = 'cancelled' AND o.status = 'queued' AND n.last_error->>'reason' = 'expired'
                  AND n.last_error IS DISTINCT FROM o.last_error THEN 'expired'
             WHEN n.status = 'cancelled' THEN 'cancelled'
             -- A durable handler ended its run to sleep or wait: no attempt used.
             WHEN o.status = 'running' AND n.status = 'queued' AND n.attempt < o.attempt AND n.wait IS NOT NULL
               THEN CASE n.wait->>'type' WHEN 'sleep' THEN 'sleeping' ELSE 'waiting' END
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
    INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
    SELECT c.id, c.queue, c.kind, c.type::herald.event_type, c.status, c.attempt, c.worker,
           CASE c.type
             WHEN 'resumed' THEN c.old_wait
             WHEN 'sleeping' THEN jsonb_build_object('until', c.wait->'until')
             WHEN 'waiting' THEN CASE WHEN c.wait ? 'childId' THEN jsonb_build_object('childId', c.wait->'childId')
                                      ELSE jsonb_build_object('signal', c.wait->'name', 'until', c.wait->'until') END
             WHEN 'claimed' THEN jsonb_build_object(
               'leaseExpiresAt', herald.iso_utc(c.lease_expires_at),
               'lagMs', round(extract(epoch FROM (c.started_at - c.old_available_at)) * 1000))
             WHEN 'progress' THEN c.progress
             WHEN 'succeeded' THEN jsonb_build_object(
               'durationMs', round(extract(epoch FROM (c.finished_at - c.started_at)) * 1000))
             WHEN 'retry_scheduled' THEN jsonb_build_object('error', c.last_error->>'message', 'runAt', herald.iso_utc(c.available_at))
             WHEN 'failed' THEN jsonb_build_object('error', c.last_error->>'message') || CASE WHEN dead_letters ? c.id::text THEN jsonb_build_object('deadLetter', dead_letters -> c.id::text) ELSE '{}'::jsonb END
             WHEN 'lease_expired' THEN jsonb_build_object(
               'reason', c.last_error->>'reason',
               'error', c.last_error->>'message',
               'runAt', CASE WHEN c.status = 'queued' THEN herald.iso_utc(c.available_at) END)
               || CASE WHEN c.status = 'failed' THEN CASE WHEN dead_letters ? c.id::text THEN jsonb_build_object('deadLetter', dead_letters -> c.id::text) ELSE '{}'::jsonb END ELSE '{}'::jsonb END
             WHEN 'retried' THEN jsonb_build_object('maxAttempts', c.max_attempts)
             WHEN 'promoted' THEN jsonb_build_object('scheduledFor', herald.iso_utc(c.old_available_at))
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
    WHERE c.status = 'queued' AND (c.old_status <> 'queued' OR c.type = 'promoted')
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
           array_agg(c.id) FILTER (WHERE c.status = 'blocked' AND c.old_status <> 'blocked') AS reblocked,
           array_agg(c.id) FILTER (WHERE c.invoked_by IS NOT NULL AND c.status IN ('succeeded', 'failed', 'cancelled')
                                     AND c.old_status NOT IN ('succeeded', 'failed', 'cancelled')) AS returned
    FROM c
    WHERE c.has_children OR c.status = 'blocked' OR c.invoked_by IS NOT NULL
  )
  SELECT (SELECT count(pg_notify('herald_jobs', w.queue || ' ' || ceil(extract(epoch FROM w.next_at) * 1000)::bigint))
          FROM wake w WHERE NOT w.runnable)
         + (SELECT count(*) FROM cancel)
         + herald.wake_at_commit(ARRAY(SELECT 'herald_jobs ' || w.queue FROM wake w WHERE w.runnable
                                       UNION SELECT 'herald_jobs ' || f.queue FROM freed f)),
         flow.finished, flow.reopened, flow.reblocked, flow.returned
  INTO notified, finished, reopened, reblocked, returned
  FROM flow;
  IF dead_ids IS NOT NULL THEN
    INSERT INTO herald.jobs (id, queue, kind, payload, priority, max_attempts, requires, "group", tags, timeout_ms,
                             dead_letter_of, source_queue, trace)
    OVERRIDING SYSTEM VALUE
    SELECT d.id, d.queue, n.kind, n.payload, n.priority, n.max_attempts, n.requires, n."group", n.tags, n.timeout_ms,
           n.id, n.queue, n.trace
    FROM unnest(dead_ids, dead_queues, dead_of) AS d(id, queue, dead_letter_of) JOIN new_jobs n ON n.id = d.dead_letter_of
    ORDER BY d.id;
    -- A source holds at most one copy a redrive would send back: a job retried after its first
    -- copy and failing for good again replaces that copy (cancelled, naming the new one), so a
    -- redrive runs its work once, not once per failure. Probed first: an UPDATE fires the
    -- statement triggers of jobs even when it changes no row.
    IF EXISTS (SELECT 1 FROM herald.jobs j WHERE j.dead_letter_of = ANY (dead_of) AND j.status IN ('queued', 'failed')
                                           AND NOT (j.id = ANY (dead_ids))) THEN
      UPDATE herald.jobs j
      SET status = 'cancelled', finished_at = now(), cancel_requested_at = NULL,
          last_error = jsonb_build_object('message', 'replaced by dead-letter copy ' || d.id, 'reason', 'replaced', 'jobId', d.id::text)
      FROM unnest(dead_ids, dead_of) AS d(id, dead_letter_of)
      WHERE j.dead_letter_of = d.dead_letter_of AND j.id < d.id AND j.status IN ('queued', 'failed');
    END IF;
  END IF;
  IF finished IS NOT NULL OR reopened IS NOT NULL OR reblocked IS NOT NULL THEN
    PERFORM herald.flow_after_update(finished, reopened, reblocked);
  END IF;
  IF returned IS NOT NULL THEN
    PERFORM herald.invoke_returned(returned);
  END IF;
  RETURN NULL;
END $function$;
