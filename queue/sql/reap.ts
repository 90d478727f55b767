import { LOCK_NAMESPACE, REAPER_KEY } from '../locks.ts';
import type { JobStatus } from '../schema.ts';
import { statement } from './statement.ts';

// Running jobs whose owner is gone come back: the lease ran out, or the owner's liveness lock
// (a session advisory lock on its listener connection) vanished because the process died.
// Only one reaper runs at a time (the try-lock gate), so many workers never stampede. The UPDATE
// re-checks status and the condition itself, on the locked row: a job that completed after
// the scan started is left alone (River #1302).
const DEAD = `
  j.status = 'running'
  AND (j.lease_expires_at < now()
       OR (j.owner_lock IS NOT NULL AND j.owner_lock NOT IN (SELECT key FROM live)))`;

export const reapJobs = statement<[limit: number], { id: string; status: JobStatus }>(
  'reap',
  `
WITH gate AS MATERIALIZED (
  SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, ${REAPER_KEY}) AS ok
),
live AS MATERIALIZED (
  SELECT objid::bigint::int AS key
  FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${LOCK_NAMESPACE}::bigint::oid
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
),
dead AS (
  SELECT j.id FROM herald.jobs j
  WHERE (SELECT ok FROM gate) AND ${DEAD}
  ORDER BY j.lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE herald.jobs j
SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                  WHEN j.attempt >= j.max_attempts THEN 'failed'
                  ELSE 'queued' END::herald.job_status,
    finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts THEN now() END,
    available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts
                        THEN j.available_at ELSE now() END,
    last_error = jsonb_build_object(
      'message', CASE WHEN j.lease_expires_at < now()
                      THEN 'lease expired: worker ' || j.locked_by || ' stopped renewing it'
                      ELSE 'worker ' || j.locked_by || ' died (its connection closed)' END,
      'reason', CASE WHEN j.lease_expires_at < now() THEN 'lease_expired' ELSE 'owner_gone' END,
      'worker', j.locked_by,
      'attempt', j.attempt),
    locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
FROM dead
WHERE j.id = dead.id AND ${DEAD}
RETURNING j.id, j.status`,
);
