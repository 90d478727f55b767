-- Hand-written: workflows (0015_flows.sql made the tables and columns). A blocked job waits for
-- its parents (herald.job_edges); the statement that finishes a parent settles its children in
-- the same transaction: unblocked (queued, event 'unblocked', the usual wake-up NOTIFY) once no
-- parent is unfinished, or cancelled with the reason dependency_failed, carried down the graph.
--
-- Why it is right under every interleaving: a settler first locks the children it may change,
-- in id order (so two settlers never deadlock on each other), and only then reads their parents,
-- in a NEW statement: in READ COMMITTED each statement of a plpgsql function takes a fresh
-- snapshot, so it sees every parent whose transaction committed before it got the lock. Of two
-- parents finishing at once in two transactions, the one that locks the child second sees the
-- other's commit; the one that locks it first saw the other parent still running and left the
-- child blocked. No count is carried from a read taken before the lock.
-- Parents are never missed either: adding a child to an existing job first locks that job and
-- sets its has_children (queue/sql/flows.ts), so a parent finishing meanwhile waits for the new
-- edge and sees it, or finished before and the new child is settled by its own transaction.
--
-- Cost for jobs outside workflows: the update trigger tests has_children and the status change
-- on the row set it already built; every function below runs only when that finds something.

-- Plans: these walk a few rows by key. Transition-heavy tables have stale statistics (a table
-- of fresh jobs "has no blocked rows"), and a planner that believes it scans all jobs once per
-- step of a walk: O(n²) on a 1,000-deep chain. So each step reaches rows by key only: edges
-- through a LATERAL that cannot be flattened (OFFSET 0), a job's status through a scalar
-- subquery on its primary key.

-- Settles blocked children whose parents may have changed: cancels those that wait with
-- onParentFailure 'cancel' on a parent that failed, was cancelled or is gone (and their own
-- waiting descendants, in the same statement: a trigger per level would overflow the stack on a
-- deep chain), and queues those with no unfinished parent left.
CREATE FUNCTION herald.flow_settle(kids bigint[]) RETURNS void LANGUAGE plpgsql
SET enable_nestloop = on
AS $fn$
DECLARE
  ids bigint[];
  parents bigint[];
  whys text[];
BEGIN
  IF kids IS NULL OR cardinality(kids) = 0 THEN
    RETURN;
  END IF;
  PERFORM 1 FROM herald.jobs WHERE id = ANY(kids) AND status = 'blocked' ORDER BY id FOR UPDATE;

  -- From here on, fresh snapshots: every parent finished before the locks were taken is seen.
  WITH RECURSIVE doomed(id, parent, why) AS (
    SELECT c.id, f.parent, f.why
    FROM herald.jobs c
    CROSS JOIN LATERAL (
      SELECT s.parent, s.why
      FROM (SELECT e.parent, e.pos, coalesce((SELECT p.status::text FROM herald.jobs p WHERE p.id = e.parent), 'deleted') AS why
            FROM herald.job_edges e WHERE e.child = c.id OFFSET 0) s
      WHERE s.why IN ('failed', 'cancelled', 'deleted')
      ORDER BY s.pos
      LIMIT 1) f
    WHERE c.id = ANY(kids) AND c.status = 'blocked' AND c.on_parent_failure = 'cancel'
    UNION
    SELECT k.child, d.id, 'cancelled'
    FROM doomed d
    CROSS JOIN LATERAL (SELECT e.child FROM herald.job_edges e WHERE e.parent = d.id OFFSET 0) k
    WHERE (SELECT c.status = 'blocked' AND c.on_parent_failure = 'cancel' FROM herald.jobs c WHERE c.id = k.child)
  )
  SELECT array_agg(d.id ORDER BY d.id), array_agg(d.parent ORDER BY d.id), array_agg(d.why ORDER BY d.id)
  INTO ids, parents, whys
  FROM (SELECT DISTINCT ON (id) id, parent, why FROM doomed ORDER BY id, parent) d;

  IF ids IS NOT NULL THEN
    PERFORM 1 FROM herald.jobs WHERE id = ANY(ids) AND status = 'blocked' ORDER BY id FOR UPDATE;
    UPDATE herald.jobs j
    SET status = 'cancelled', finished_at = now(),
        last_error = jsonb_build_object(
          'message', 'parent ' || d.parent || CASE d.why WHEN 'deleted' THEN ' was deleted' WHEN 'failed' THEN ' failed' ELSE ' was cancelled' END,
          'reason', 'dependency_failed',
          'parent', d.parent::text)
    FROM unnest(ids, parents, whys) AS d(id, parent, why)
    WHERE j.id = ANY(ids) AND j.id = d.id AND j.status = 'blocked';
  END IF;

  -- A child with onParentFailure 'cancel' is queued only when no parent failed either: a parent
  -- that failed after the statement above leaves it blocked, and that parent's own transaction
  -- (waiting for our lock on the child) cancels it.
  UPDATE herald.jobs j
  SET status = 'queued', available_at = greatest(j.available_at, now())
  WHERE j.id = ANY(kids) AND j.status = 'blocked'
    AND NOT EXISTS (
      SELECT 1 FROM herald.job_edges e
      WHERE e.child = j.id
        AND (SELECT p.status FROM herald.jobs p WHERE p.id = e.parent) NOT IN ('succeeded', 'failed', 'cancelled'))
    AND (j.on_parent_failure = 'run' OR NOT EXISTS (
      SELECT 1 FROM herald.job_edges e
      WHERE e.child = j.id
        AND coalesce((SELECT p.status::text FROM herald.jobs p WHERE p.id = e.parent), 'deleted') IN ('failed', 'cancelled', 'deleted')));
END $fn$;
--> statement-breakpoint

-- Parents that run again (a retry): their descendants that were cancelled because of them wait
-- again (status blocked; the update trigger then settles them like any re-blocked job).
CREATE FUNCTION herald.flow_reopen(reopened bigint[]) RETURNS void LANGUAGE plpgsql
SET enable_nestloop = on
AS $fn$
DECLARE
  ids bigint[];
BEGIN
  WITH RECURSIVE back(id) AS (
    SELECT e.child
    FROM herald.job_edges e
    WHERE e.parent = ANY(reopened) AND (SELECT c.status = 'cancelled' AND c.last_error->>'reason' = 'dependency_failed' AND c.last_error->>'parent' = e.parent::text FROM herald.jobs c WHERE c.id = e.child)
    UNION
    SELECT k.child
    FROM back b
    CROSS JOIN LATERAL (SELECT e.child, e.parent FROM herald.job_edges e WHERE e.parent = b.id OFFSET 0) k
    WHERE (SELECT c.status = 'cancelled' AND c.last_error->>'reason' = 'dependency_failed' AND c.last_error->>'parent' = k.parent::text FROM herald.jobs c WHERE c.id = k.child)
  )
  SELECT array_agg(id ORDER BY id) INTO ids FROM back;
  IF ids IS NULL THEN
    RETURN;
  END IF;
  PERFORM 1 FROM herald.jobs WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
  UPDATE herald.jobs
  SET status = 'blocked', finished_at = NULL, last_error = NULL, cancel_requested_at = NULL,
      result = NULL, progress = NULL, available_at = now()
  WHERE id = ANY(ids) AND status = 'cancelled' AND last_error->>'reason' = 'dependency_failed';
END $fn$;
--> statement-breakpoint

-- The flow work of one UPDATE statement on jobs: rows that gained or lost a finish (with
-- children), and rows that became blocked again (a retry of a job that has parents).
CREATE FUNCTION herald.flow_after_update(finished bigint[], reopened bigint[], reblocked bigint[]) RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF reopened IS NOT NULL THEN
    PERFORM herald.flow_reopen(reopened);
  END IF;
  IF finished IS NOT NULL OR reblocked IS NOT NULL THEN
    PERFORM herald.flow_settle(ARRAY(
      SELECT DISTINCT e.child FROM herald.job_edges e WHERE e.parent = ANY(finished)
      UNION
      SELECT unnest(reblocked)));
  END IF;
END $fn$;
--> statement-breakpoint

-- The function as 0013_enqueued_max_attempts.sql left it, plus the job's flow_id on the event.
CREATE OR REPLACE FUNCTION herald.jobs_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
  SELECT n.id, n.queue, n.kind, 'enqueued', n.status, n.attempt, NULL,
         jsonb_build_object('priority', n.priority, 'runAt', herald.iso_utc(n.available_at), 'maxAttempts', n.max_attempts), n.flow_id
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

-- The function as 0014_dead_letters.sql left it (dead-letter copies of terminal failures, taken
-- over verbatim; its columns and queues.dead_letter exist since 0014 runs first), plus: the event
-- type 'unblocked' (blocked → queued), the data {reason: 'dependency_failed', parent} of a cancel
-- the flow made, events carry the job's flow_id, and the flow work above for the rows that need it.
CREATE OR REPLACE FUNCTION herald.jobs_after_update() RETURNS trigger LANGUAGE plpgsql
SET enable_nestloop = off
AS $fn$
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
  -- Work that became runnable now (new attempt, manual retry, reaped lease, unblocked) wakes workers.
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
  SELECT (SELECT count(*) FROM wake) + (SELECT count(*) FROM freed) + (SELECT count(*) FROM cancel),
         flow.finished, flow.reopened, flow.reblocked
  INTO notified, finished, reopened, reblocked
  FROM flow;
  IF finished IS NOT NULL OR reopened IS NOT NULL OR reblocked IS NOT NULL THEN
    PERFORM herald.flow_after_update(finished, reopened, reblocked);
  END IF;
  RETURN NULL;
END $fn$;
--> statement-breakpoint

-- Deleted jobs (retention, bulk delete): a deleted parent counts as failed for its waiting
-- children; a deleted child takes its edges along; a flow goes with its last job.
CREATE FUNCTION herald.jobs_after_delete() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  gone_parents bigint[];
  gone_children bigint[];
  gone_flows bigint[];
BEGIN
  SELECT array_agg(o.id) FILTER (WHERE o.has_children),
         array_agg(o.id) FILTER (WHERE o.on_parent_failure IS NOT NULL),
         array_agg(DISTINCT o.flow_id) FILTER (WHERE o.flow_id IS NOT NULL)
  INTO gone_parents, gone_children, gone_flows
  FROM old_jobs o
  WHERE o.has_children OR o.on_parent_failure IS NOT NULL OR o.flow_id IS NOT NULL;
  IF gone_children IS NOT NULL THEN
    DELETE FROM herald.job_edges WHERE child = ANY(gone_children);
  END IF;
  IF gone_parents IS NOT NULL THEN
    PERFORM herald.flow_settle(ARRAY(SELECT DISTINCT e.child FROM herald.job_edges e WHERE e.parent = ANY(gone_parents)));
  END IF;
  IF gone_flows IS NOT NULL THEN
    DELETE FROM herald.flows f
    WHERE f.id = ANY(gone_flows) AND NOT EXISTS (SELECT 1 FROM herald.jobs j WHERE j.flow_id = f.id);
  END IF;
  RETURN NULL;
END $fn$;
--> statement-breakpoint
CREATE TRIGGER jobs_after_delete AFTER DELETE ON herald.jobs
  REFERENCING OLD TABLE AS old_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION herald.jobs_after_delete();
