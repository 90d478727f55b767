ALTER TABLE "herald"."jobs" ADD COLUMN "waiting_on" integer;--> statement-breakpoint
-- A parent's end costs what its children are, not what their other parents are. Before, settling
-- a child read every parent of it, so each of N parents ending rechecked the N: N² reads for one
-- fan-in. Now each job with parents counts the parents that have not ended (waiting_on): the
-- transaction that ends parents counts their children down under the children's locks (taken in
-- one pass, as 0028 takes them), and reads only the ended parents' edges to find the children a
-- failure cancels. A parent that runs again counts its children up (flow_reopen). A child's other
-- parents are read once, when it is queued (a cancel child checks that none failed).
-- The count is filled in with the update triggers off: no status changes, and the triggers'
-- event type cast cannot run in a batch that added an enum value on the way (an older database).
ALTER TABLE herald.jobs DISABLE TRIGGER jobs_after_update;
--> statement-breakpoint
ALTER TABLE herald.jobs DISABLE TRIGGER jobs_counts_after_update;
--> statement-breakpoint
UPDATE herald.jobs c
SET waiting_on = (SELECT count(*) FROM herald.job_edges e JOIN herald.jobs p ON p.id = e.parent
                  WHERE e.child = c.id AND p.status NOT IN ('succeeded', 'failed', 'cancelled'))
WHERE c.on_parent_failure IS NOT NULL;
--> statement-breakpoint
ALTER TABLE herald.jobs ENABLE TRIGGER jobs_after_update;
--> statement-breakpoint
ALTER TABLE herald.jobs ENABLE TRIGGER jobs_counts_after_update;
--> statement-breakpoint
DROP FUNCTION herald.flow_settle(bigint[]);
--> statement-breakpoint
-- kids: the jobs to settle. ended: the parents that ended in the calling statement (their
-- children are the kids, counted down here); null when the kids are new or blocked again, or a
-- parent was deleted: then every parent of each kid is read.
CREATE FUNCTION herald.flow_settle(kids bigint[], ended bigint[] DEFAULT NULL) RETURNS void LANGUAGE plpgsql
SET enable_nestloop TO 'on'
AS $function$
DECLARE
  ec bigint[];
  ep bigint[];
  epos int[];
  ids bigint[];
  parents bigint[];
  whys text[];
BEGIN
  IF kids IS NULL OR cardinality(kids) = 0 THEN
    RETURN;
  END IF;
  -- The edges whose parent may cancel a kid: the ended parents' ones, else all of the kids'.
  IF ended IS NULL THEN
    SELECT array_agg(e.child), array_agg(e.parent), array_agg(e.pos) INTO ec, ep, epos
    FROM herald.job_edges e WHERE e.child = ANY(kids);
  ELSE
    SELECT array_agg(e.child), array_agg(e.parent), array_agg(e.pos) INTO ec, ep, epos
    FROM herald.job_edges e WHERE e.parent = ANY(ended) AND e.child = ANY(kids);
  END IF;

  -- One lock pass in id order over every job this call may write (0028 says why).
  PERFORM 1 FROM herald.jobs WHERE id = ANY(ARRAY(
    WITH RECURSIVE reach(id, cancels) AS (
      SELECT k.id, k.on_parent_failure = 'cancel' AND EXISTS (
               SELECT 1 FROM unnest(ec, ep) AS u(child, parent)
               WHERE u.child = k.id
                 AND coalesce((SELECT p.status::text FROM herald.jobs p WHERE p.id = u.parent), 'deleted') IN ('failed', 'cancelled', 'deleted'))
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

  IF ended IS NOT NULL THEN
    UPDATE herald.jobs j SET waiting_on = j.waiting_on - d.n
    FROM (SELECT u.child, count(*)::int AS n FROM unnest(ec) AS u(child) GROUP BY u.child) d
    WHERE j.id = d.child;
  END IF;

  -- From here on, fresh snapshots: every parent finished before the locks were taken is seen, and
  -- so is every child made blocked again by a transaction the lock waited for.
  WITH RECURSIVE doomed(id, parent, why) AS (
    SELECT f.child, f.parent, f.why
    FROM (SELECT DISTINCT ON (s.child) s.child, s.parent, s.why
          FROM (SELECT u.child, u.parent, u.pos,
                       coalesce((SELECT p.status::text FROM herald.jobs p WHERE p.id = u.parent), 'deleted') AS why
                FROM unnest(ec, ep, epos) AS u(child, parent, pos)) s
          WHERE s.why IN ('failed', 'cancelled', 'deleted')
          ORDER BY s.child, s.pos) f
    JOIN herald.jobs c ON c.id = f.child
    WHERE c.status = 'blocked' AND c.on_parent_failure = 'cancel'
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

  -- Queued once no parent is left: a child with onParentFailure 'cancel' only when no parent
  -- failed either (read once per child, here). A parent that failed after the statement above
  -- leaves it blocked, and that parent's own transaction (waiting for our lock) cancels it.
  UPDATE herald.jobs j
  SET status = 'queued', available_at = greatest(j.available_at, now())
  WHERE j.id = ANY(kids) AND j.status = 'blocked' AND j.waiting_on = 0
    AND (j.on_parent_failure = 'run' OR NOT EXISTS (
      SELECT 1 FROM herald.job_edges e
      WHERE e.child = j.id
        AND coalesce((SELECT p.status::text FROM herald.jobs p WHERE p.id = e.parent), 'deleted') IN ('failed', 'cancelled', 'deleted')));
END $function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herald.flow_after_update(finished bigint[], reopened bigint[], reblocked bigint[]) RETURNS void
LANGUAGE plpgsql
AS $function$
BEGIN
  IF reopened IS NOT NULL THEN
    PERFORM herald.flow_reopen(reopened);
  END IF;
  IF finished IS NOT NULL THEN
    PERFORM herald.flow_settle(ARRAY(SELECT DISTINCT e.child FROM herald.job_edges e WHERE e.parent = ANY(finished)), finished);
  END IF;
  IF reblocked IS NOT NULL THEN
    PERFORM herald.flow_settle(reblocked);
  END IF;
END $function$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION herald.flow_reopen(reopened bigint[]) RETURNS void LANGUAGE plpgsql
SET enable_nestloop TO 'on'
AS $function$
DECLARE
  kids bigint[];
  ids bigint[];
BEGIN
  SELECT array_agg(DISTINCT e.child) INTO kids FROM herald.job_edges e WHERE e.parent = ANY(reopened);
  IF kids IS NULL THEN
    RETURN;
  END IF;
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
  -- Every child counts the parent up again, whatever its status; one lock pass in id order.
  PERFORM 1 FROM herald.jobs WHERE id = ANY(kids || coalesce(ids, '{}')) ORDER BY id FOR UPDATE;
  UPDATE herald.jobs j SET waiting_on = j.waiting_on + d.n
  FROM (SELECT e.child, count(*)::int AS n FROM herald.job_edges e WHERE e.parent = ANY(reopened) GROUP BY e.child) d
  WHERE j.id = d.child;
  IF ids IS NULL THEN
    RETURN;
  END IF;
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
