-- Workflows under every interleaving.
--
-- herald.flow_settle locks, in one pass in id order, every job it may write: the children whatever
-- their status in its snapshot, and, below a child that may be cancelled (one of its parents
-- failed, was cancelled or deleted), every job a cancel can reach, whatever its status.
-- - A child that an open transaction (a flow, job or bulk retry) is making blocked again is waited
--   for and then seen blocked, so the parent that ends meanwhile settles it. Before, only the
--   children blocked in the settler's own snapshot were locked: that child was skipped without a
--   wait, and stayed blocked with every parent ended. The cascade's walk had the same window.
-- - Two settlers lock in one order, so they cannot deadlock. Before, the cascade locked the
--   descendants in a second pass, below children already held.
--
-- herald.flow_reopen also makes blocked again the `run` children that are queued and not yet
-- started: a parent that runs again is waited for by every child, whatever its policy.
CREATE OR REPLACE FUNCTION herald.flow_settle(kids bigint[]) RETURNS void LANGUAGE plpgsql
SET enable_nestloop TO 'on'
AS $function$
DECLARE
  ids bigint[];
  parents bigint[];
  whys text[];
BEGIN
  IF kids IS NULL OR cardinality(kids) = 0 THEN
    RETURN;
  END IF;
  PERFORM 1 FROM herald.jobs WHERE id = ANY(ARRAY(
    WITH RECURSIVE reach(id, cancels) AS (
      SELECT k.id, k.on_parent_failure = 'cancel' AND EXISTS (
               SELECT 1 FROM herald.job_edges e
               WHERE e.child = k.id
                 AND coalesce((SELECT p.status::text FROM herald.jobs p WHERE p.id = e.parent), 'deleted') IN ('failed', 'cancelled', 'deleted'))
      FROM herald.jobs k
      WHERE k.id = ANY(kids)
      UNION
      SELECT x.child, x.on_parent_failure = 'cancel'
      FROM reach r
      CROSS JOIN LATERAL (SELECT e.child, c.on_parent_failure
                          FROM herald.job_edges e JOIN herald.jobs c ON c.id = e.child
                          WHERE e.parent = r.id OFFSET 0) x
      WHERE r.cancels
    )
    SELECT id FROM reach))
  ORDER BY id FOR UPDATE;

  -- From here on, fresh snapshots: every parent finished before the locks were taken is seen, and
  -- so is every child made blocked again by a transaction the lock waited for.
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
    -- Locked above already, but for a job whose parent failed after the first pass read it.
    PERFORM 1 FROM herald.jobs WHERE id = ANY(ids) ORDER BY id FOR UPDATE;
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
END $function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herald.flow_reopen(reopened bigint[]) RETURNS void LANGUAGE plpgsql
SET enable_nestloop TO 'on'
AS $function$
DECLARE
  ids bigint[];
BEGIN
  -- The jobs cancelled because of a reopened parent (and down from them), and its `run` children
  -- that are queued, not yet started: all wait for it again.
  WITH RECURSIVE back(id) AS (
    SELECT e.child
    FROM herald.job_edges e
    WHERE e.parent = ANY(reopened)
      AND (SELECT (c.status = 'cancelled' AND c.last_error->>'reason' = 'dependency_failed' AND c.last_error->>'parent' = e.parent::text)
                  OR (c.status = 'queued' AND c.on_parent_failure = 'run')
           FROM herald.jobs c WHERE c.id = e.child)
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
  -- A queued `run` child keeps its attempt, error and schedule; it only waits again. One a worker
  -- took meanwhile (running now) started after every parent had ended, and goes on.
  UPDATE herald.jobs
  SET status = 'blocked',
      finished_at = NULL, cancel_requested_at = NULL, result = NULL, progress = NULL,
      last_error = CASE WHEN status = 'queued' THEN last_error END,
      available_at = CASE WHEN status = 'queued' THEN available_at ELSE now() END
  WHERE id = ANY(ids)
    AND ((status = 'cancelled' AND last_error->>'reason' = 'dependency_failed')
         OR (status = 'queued' AND on_parent_failure = 'run'));
END $function$;
